"""Feature maps state their strides and stages; frozen stages lower training cost by exactly their share."""
import pytest

import zoo
from zoo.errors import ZooError
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


def _drop(name: str, frozen: int) -> tuple[dict, dict]:
    return count(name, 224, features=True), count(name, 224, features=True, frozen_stages=frozen)


def test_frozen_stem_and_stage_1_of_resnet50():
    """By hand, ResNet-50 at 224 (He et al. Table 1): conv1 7x7 3->64 on 112^2 = 118,013,952 MACs; layer1 at
    56^2: block 1 = 1x1 64->64, 3x3 64->64, 1x1 64->256, downsample 1x1 64->256; blocks 2-3 = 1x1 256->64,
    3x3, 1x1 64->256. Unfrozen, backward costs conv1's weight gradient (1x; the image needs no gradient) and
    2x layer1; frozen, none of it, and layer2.0's conv1 and downsample (1x1 256->128 at 56^2, 1x1 stride 2
    256->512 at 28^2) no longer need input gradients."""
    hw = 56 * 56
    conv1 = 112 * 112 * 64 * 3 * 49
    block1 = hw * (64 * 64 + 64 * 64 * 9 + 64 * 256 + 64 * 256)
    block23 = hw * (256 * 64 + 64 * 64 * 9 + 64 * 256)
    layer2_inputs = hw * 256 * 128 + 28 * 28 * 256 * 512
    free, frozen = _drop("resnet50", 1)
    assert free["train_macs"] - frozen["train_macs"] == conv1 + 2 * (block1 + 2 * block23) + layer2_inputs
    assert free["macs"] == frozen["macs"]                    # the forward is unchanged
    frozen_params = (9408 + 128) + 215_808                   # conv1 + bn1, layer1 (torchvision's counts)
    assert free["trainable_params"] - frozen["trainable_params"] == frozen_params
    act_drop = free["train_act_peak_bytes"] - frozen["train_act_peak_bytes"]
    assert act_drop > 0                                      # frozen layers save nothing for backward
    # a gradient and an SGD momentum buffer (fp32) less per frozen parameter
    assert free["train_serve_bytes"] - frozen["train_serve_bytes"] == act_drop + 2 * 4 * frozen_params


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
    with pytest.raises(ZooError, match="0..4"):
        count("resnet50", 224, train=False, features=True, frozen_stages=5)
