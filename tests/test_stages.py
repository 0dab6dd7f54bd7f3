"""Feature maps state their strides and stages; frozen stages lower training cost by exactly their share."""
import pytest
import torch

import zoo
from analysis.size import Size
from zoo.errors import ZooError
from zoo.runs.counted import build
from zoo.runs.request import Request
from zoo.runs.tasks import count

HIERARCHICAL = ["resnet50", "bit_r50x1", "convnext_t", "swin_t", "regnety_160", "effnet_l2", "vitdet_b16"]


@pytest.mark.parametrize("name", HIERARCHICAL + ["vit_b16", "deit_s", "eva02_b14"])
def test_strides_are_input_over_map_side(name):
    spec = zoo.get_spec(name)
    size = 448 if spec.rule.accepts(448) else spec.rule.nearest(448)[0]
    record = count(name, size, train=False, features=True)
    expected = [4, 8, 16, 32] if name in HIERARCHICAL else [spec.patch_size]   # detectors' C2-C5 / the token grid
    assert record["feature_strides"] == expected
    assert [size // stride for stride in expected] == [h for _, h, _ in record["features"]]
    assert len(record["feature_stages"]) == len(expected)


def test_resnet_gives_c2_to_c5_and_the_stem_on_request():
    assert [c for c, _, _ in zoo.feature_shapes("resnet50", 224)] == [256, 512, 1024, 2048]   # He et al. Table 1
    with_stem = zoo.create_model("resnet50", 224, device="meta", features=True, out_indices=(0, 1, 2, 3, 4))
    assert with_stem.feature_info.reduction() == [2, 4, 8, 16, 32]


def _drop(name: str, frozen: int, dtype: str = "fp32") -> tuple[dict, dict]:
    return count(name, 224, features=True, dtype=dtype), count(name, 224, features=True, frozen_stages=frozen,
                                                                dtype=dtype)


FP32, INT64 = 4, 8


def _resnet50_frozen_macs(h: int, w: int) -> int:
    """By hand (He et al. Table 1): conv1 7x7 3->64 at H/2 x W/2; layer1 at H/4 x W/4: block 1 = 1x1 64->64,
    3x3 64->64, 1x1 64->256, downsample 1x1 64->256; blocks 2-3 = 1x1 256->64, 3x3, 1x1 64->256. Unfrozen,
    backward costs conv1's weight gradient (1x; the image needs no gradient) and 2x layer1; frozen, none of
    it, and layer2.0's conv1 and downsample (1x1 256->128 at H/4 x W/4, 1x1 stride 2 256->512 at H/8 x W/8)
    no longer need input gradients."""
    hw = (h // 4) * (w // 4)
    conv1 = (h // 2) * (w // 2) * 64 * 3 * 49                  # 118,013,952 at 224
    block1 = hw * (64 * 64 + 64 * 64 * 9 + 64 * 256 + 64 * 256)
    block23 = hw * (256 * 64 + 64 * 64 * 9 + 64 * 256)
    layer2_inputs = hw * 256 * 128 + (h // 8) * (w // 8) * 256 * 512
    return conv1 + 2 * (block1 + 2 * block23) + layer2_inputs


def _resnet50_frozen_bytes(h: int, w: int, frozen: int) -> int:
    """What ResNet-50's stem (and layer1) keep for backward and nothing after them reads, fp32 at batch 1.
    Stem: conv1's output (bn1 saves its input), bn1's output (the in-place ReLU saves it, maxpool reads it),
    maxpool's int64 argmax indices, bn1's batch mean and inverse std; maxpool's output stays while layer1's
    convolutions save it. With layer1: maxpool's output too; each bottleneck's conv outputs (its BN saves
    them) and BN outputs (read by an in-place ReLU, or added into in place before one: timm's `x +=
    shortcut`), the downsample conv's output (its BN output only feeds the add), 2 statistics per BN channel.
    Block 3's output stays: layer2.0's conv1 and downsample (and a detector's FPN lateral) still save it."""
    half, quarter = (h // 2) * (w // 2), (h // 4) * (w // 4)
    stem = FP32 * 2 * 64 * half + INT64 * 64 * quarter + FP32 * 2 * 64
    if not frozen:
        return stem
    maps = 64 + (4 * 64 + 2 * 256 + 256) + (4 * 64 + 2 * 256) + (4 * 64 + 256)
    bn_channels = (2 * 64 + 2 * 256) + 2 * (2 * 64 + 256)
    return stem + FP32 * maps * quarter + FP32 * 2 * bn_channels


FROZEN_PARAMS = (9408 + 128) + 215_808                       # conv1 + bn1, layer1 (torchvision's counts)


def _frozen_blocks() -> int:
    """Bytes of the fp32 gradients of torchvision's ResNet-50 conv1, bn1 and layer1 as the CUDA caching allocator
    books them: each tensor its own block, rounded up to 512 bytes (kMinBlockSize; all under 10 MiB)."""
    import torchvision

    net = torchvision.models.resnet50()
    tensors = [p for part in (net.conv1, net.bn1, net.layer1) for p in part.parameters()]
    assert sum(p.numel() for p in tensors) == FROZEN_PARAMS
    return sum(-(-4 * p.numel() // 512) * 512 for p in tensors)


def _gpu_drop(free: dict, frozen: dict) -> None:
    """A frozen parameter has no fp32 gradient (one block each) and no SGD momentum; its weight is still held."""
    fp, gp = free["train_gpu_parts"], frozen["train_gpu_parts"]
    assert fp["grad_bytes"] - gp["grad_bytes"] == _frozen_blocks() and fp["weight_bytes"] == gp["weight_bytes"]
    assert free["train_serve_bytes"] - frozen["train_serve_bytes"] >= 2 * _frozen_blocks()


def test_frozen_stem_and_stage_1_of_resnet50():
    free, frozen = _drop("resnet50", 1)
    assert free["train_macs"] - frozen["train_macs"] == _resnet50_frozen_macs(224, 224)
    assert free["macs"] == frozen["macs"]                    # the forward is unchanged
    assert free["trainable_params"] - frozen["trainable_params"] == FROZEN_PARAMS
    _gpu_drop(free, frozen)                                  # a gradient and an SGD momentum buffer less


@pytest.mark.parametrize("frozen", [0, 1])
def test_frozen_stages_of_resnet50_lower_training_memory_by_what_they_kept_for_backward(frozen):
    free, frozen_row = _drop("resnet50", frozen)
    expected = _resnet50_frozen_bytes(224, 224, frozen)          # 8,028,672 / 37,744,128 bytes
    assert free["train_act_peak_bytes"] - frozen_row["train_act_peak_bytes"] == expected
    assert free["act_peak_bytes"] == frozen_row["act_peak_bytes"]      # inference keeps nothing for backward


def test_frozen_stages_in_a_whole_detector_at_800x1280():
    """Mask R-CNN on ResNet-50 with mmdetection's default frozen_stages=1: the backbone's share by hand, plus
    the input gradient of the FPN's C2 lateral (1x1 256->256 at 200 x 320), which also reads layer1's output:
    38,060,032,000 MACs and 770,059,776 bytes (734 MiB) less per training step."""
    h, w = 800, 1280
    free = count("resnet50", (h, w), detector="maskrcnn")
    frozen = count("resnet50", (h, w), detector="maskrcnn", frozen_stages=1)
    lateral_c2 = (h // 4) * (w // 4) * 256 * 256
    assert free["train_macs"] - frozen["train_macs"] == _resnet50_frozen_macs(h, w) + lateral_c2
    act_drop = free["train_act_peak_bytes"] - frozen["train_act_peak_bytes"]
    assert act_drop == _resnet50_frozen_bytes(h, w, 1)
    _gpu_drop(free, frozen)


def _saved_for_backward(name: str, frozen: int | None) -> int:
    """Bytes of the distinct activations autograd saves for backward in one training forward at 224 (its own
    saved-tensor hooks, not archzoo's allocation tracker); weights, buffers and the image excluded."""
    module = build(Request(name, Size(224, 224), features=True, frozen_stages=frozen), "meta").train()
    x = torch.empty(1, 3, 224, 224, device="meta")
    excluded = {id(t.untyped_storage()) for t in [x, *module.parameters(), *module.buffers()]}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if id(storage) not in excluded:
            saved[id(storage)] = storage            # held, so no id is reused
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        module(x)
    return sum(storage.nbytes() for storage in saved.values())


@pytest.mark.parametrize("name", ["convnext_t", "swin_t"])
def test_frozen_stages_lower_training_memory_by_exactly_the_activations_they_no_longer_save(name):
    """Freezing moves no peak: the training step's activation peak drops by exactly what autograd no longer
    keeps for backward (convnext_t: 44,656,640 bytes; swin_t: 43,552,776 at --frozen-stages 1)."""
    free, frozen = _drop(name, 1)
    expected = _saved_for_backward(name, None) - _saved_for_backward(name, 1)
    assert expected > 0
    assert free["train_act_peak_bytes"] - frozen["train_act_peak_bytes"] == expected


def test_frozen_weights_stay_fp32_under_bf16_autocast():
    """torch.autocast keeps the module in fp32: at bf16 a training step still holds every weight in fp32 (torchvision's
    ResNet-50 parameters and BN buffers, one 512-byte-rounded block each), and a frozen parameter still has no
    gradient; autocast's bf16 casts are counted where they are made, among the activations."""
    import torchvision

    free, frozen = _drop("resnet50", 1, dtype="bf16")
    _gpu_drop(free, frozen)
    net = torchvision.models.resnet50()
    held = [*net.parameters(), *net.buffers()]
    tail = sum(p.numel() for p in net.fc.parameters())       # features=True: no classifier
    blocks = sum(-(-4 * t.numel() // 512) * 512 for t in held) - sum(-(-4 * p.numel() // 512) * 512
                                                                     for p in net.fc.parameters())
    assert tail == 2048 * 1000 + 1000
    assert free["train_gpu_parts"]["weight_bytes"] == blocks and free["train_precision"] == "autocast bf16"


def test_frozen_stages_of_convnext_t():
    """ConvNeXt-T at 224: stem 4x4/4 3->96 on 56^2; a stage-1 block is 7x7 depthwise + 96->384->96 on 56^2."""
    hw = 56 * 56
    stem = hw * 96 * 3 * 16
    block = hw * (96 * 49 + 2 * 96 * 384)
    free, frozen = _drop("convnext_t", 1)
    assert free["train_macs"] - frozen["train_macs"] == stem + 2 * 3 * block
    free, stem_only = _drop("convnext_t", 0)
    # the stem's weight gradient, and block 1's depthwise conv no longer needs its input gradient
    assert free["train_macs"] - stem_only["train_macs"] == stem + hw * 96 * 49


def test_frozen_stages_are_checked():
    with pytest.raises(ZooError, match="ViT-like"):
        count("vit_b16", 224, train=False, features=True, frozen_stages=1)
    with pytest.raises(ZooError, match=r"\(-1\.\.4\)"):
        count("resnet50", 224, train=False, features=True, frozen_stages=5)
