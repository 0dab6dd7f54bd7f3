"""Bytes moved per operator (analysis.count.traffic) against closed forms written out by hand here:
each op reads its inputs once and writes its outputs once at their dtype; views are free."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from analysis.count.cost import cost_record
from analysis.count.meta_sdpa import FusedSdpaOnMeta
from analysis.count.traffic import TrafficCounter
from zoo import create_model

META = "meta"


def counted(fn, *tensors):
    with TrafficCounter() as traffic:
        fn(*tensors)
    return traffic


@pytest.mark.parametrize("dtype, size", [(torch.float32, 4), (torch.bfloat16, 2)])
def test_linear_bytes(dtype, size):
    b, n, d_in, d_out = 2, 197, 768, 3072
    x = torch.empty(b, n, d_in, device=META, dtype=dtype)
    w, bias = torch.empty(d_out, d_in, device=META, dtype=dtype), torch.empty(d_out, device=META, dtype=dtype)
    t = counted(F.linear, x, w, bias)
    assert t.bytes_read == size * (b * n * d_in + d_out * d_in + d_out)     # input, weight, bias (broadcast once)
    assert t.bytes_written == size * b * n * d_out
    assert t.non_mac_flops == 0 and t.mac_flops == 2 * b * n * d_in * d_out


def test_conv2d_bytes():
    b, c, h, w, o, k, s = 2, 3, 224, 224, 96, 4, 4          # ConvNeXt-T's stem
    x = torch.empty(b, c, h, w, device=META)
    weight, bias = torch.empty(o, c, k, k, device=META), torch.empty(o, device=META)
    t = counted(lambda *a: F.conv2d(*a, stride=s), x, weight, bias)
    assert t.bytes_moved == 4 * (b * c * h * w + o * c * k * k + o + b * o * (h // s) * (w // s))
    assert t.bytes_by_class["matmul_conv"] == t.bytes_moved
    by_class = t.record()["bytes_by_op_class"]        # every class named; those with no traffic are 0 bytes
    assert by_class == {**dict.fromkeys(by_class, 0), "matmul_conv": t.bytes_moved}
    assert sum(by_class.values()) == t.bytes_moved


def test_layer_norm_bytes_and_flops():
    b, n, d = 2, 197, 768
    x = torch.empty(b, n, d, device=META)
    weight, bias = torch.empty(d, device=META), torch.empty(d, device=META)
    t = counted(lambda *a: F.layer_norm(a[0], (d,), a[1], a[2]), x, weight, bias)
    # read x, gamma, beta; write y and the fp32 mean and rstd of each row (native_layer_norm returns them)
    assert t.bytes_read == 4 * (b * n * d + 2 * d)
    assert t.bytes_written == 4 * (b * n * d + 2 * b * n)
    assert t.non_mac_flops == 5 * b * n * d and t.bytes_by_class["norm"] == t.bytes_moved


def test_softmax_bytes_and_flops():
    x = torch.empty(2, 12, 197, 197, device=META)
    t = counted(lambda a: a.softmax(-1), x)
    assert t.bytes_read == t.bytes_written == 4 * x.numel()
    assert t.non_mac_flops == 5 * x.numel() and t.bytes_by_class["attention"] == t.bytes_moved


def test_fused_sdpa_bytes():
    b, heads, n, e = 2, 12, 197, 64
    q, k, v = (torch.empty(b, heads, n, e, device=META) for _ in range(3))
    with FusedSdpaOnMeta():
        t = counted(F.scaled_dot_product_attention, q, k, v)
    # read q, k, v; write the output and the fp32 log-sum-exp per query row; the N x N map is never stored
    assert t.bytes_read == 4 * 3 * b * heads * n * e
    assert t.bytes_written == 4 * (b * heads * n * e + b * heads * n)
    assert t.non_mac_flops == 5 * b * heads * n * n and t.mac_flops == 2 * b * heads * n * n * 2 * e


def test_views_are_free_and_copies_are_not():
    x = torch.empty(2, 197, 768, device=META)
    assert counted(lambda a: a.transpose(1, 2).reshape(2, 768, 197)[..., :5].unsqueeze(0), x).bytes_moved == 0
    assert counted(lambda a: a.transpose(1, 2).contiguous(), x).bytes_moved == 2 * 4 * x.numel()


def vit_b16_bytes(batch=1, img=224, p=16, c=3, d=768, depth=12, heads=12, mlp=3072, classes=1000, size=4) -> int:
    """ViT-B/16's eager forward, op by op, in elements (x `size` bytes). Np patches, N = Np + 1 tokens."""
    np_, n = (img // p) ** 2, (img // p) ** 2 + 1
    bn, bnp = batch * n, batch * np_
    embed = ((batch * c * img * img + d * c * p * p + d + bnp * d)     # patch conv: image, weight, bias -> maps
             + (d + bnp * d + bn * d)                                   # cat: class token (expanded: once) + patches
             + 2 * bn * d + n * d)                                      # + pos_embed (one copy for the batch)
    layer_norm = 2 * bn * d + 2 * d + 2 * bn                            # x, gamma, beta -> y, mean, rstd
    block = (2 * layer_norm
             + bn * d + 3 * d * d + 3 * d + 3 * bn * d                  # qkv linear
             + 3 * bn * d + bn * d + batch * heads * n                  # fused SDPA: q, k, v -> out, log-sum-exp
             + bn * d + d * d + d + bn * d                              # output projection
             + bn * d + mlp * d + mlp + bn * mlp                        # fc1
             + 2 * bn * mlp                                             # GELU
             + bn * mlp + d * mlp + d + bn * d                          # fc2
             + 2 * 3 * bn * d)                                          # two residual adds
    head = layer_norm + batch * d + d * classes + classes + batch * classes   # final norm; class token -> logits
    return size * (embed + depth * block + head)


def test_vit_b16_bytes_moved_equals_its_closed_form():
    record = cost_record(create_model("vit_b16", img_size=224, device="meta"), 224, train=False)
    assert record.bytes_moved == vit_b16_bytes() == 627_226_728
    assert sum(record.bytes_by_op_class.values()) == record.bytes_moved
    assert sum(record.bytes_by_component.values()) == record.bytes_moved
    # attention's QK^T and AV: 2 x 715,327,488 MACs + softmax 12 x 5 x 12 x 197^2 over q, k, v, out, lse
    sdpa_bytes = 12 * 4 * (4 * 197 * 768 + 12 * 197)
    assert record.arithmetic_intensity_by_component["attn_matmul"] == pytest.approx(
        (2 * 715_327_488 + 12 * 5 * 12 * 197 ** 2) / sdpa_bytes)
    # non-MAC FLOPs: 25 LayerNorms (5/elem), 12 softmaxes over 12 x 197 x 197 scores (5/elem), 12 GELUs
    # over 197 x 3072, 25 adds (pos_embed + 24 residuals) over 197 x 768 (1/elem)
    n, d = 197, 768
    assert record.non_mac_flops == 25 * 5 * n * d + 12 * 5 * 12 * n * n + 12 * n * 3072 + 25 * n * d
    flops = 2 * 17_563_828_224 + record.non_mac_flops
    assert record.arithmetic_intensity == pytest.approx(flops / 627_226_728)


def test_vit_b16_bytes_at_batch_8():
    record = cost_record(create_model("vit_b16", img_size=224, device="meta"), 224, batch_size=8, train=False)
    assert record.bytes_moved == vit_b16_bytes(batch=8)


@pytest.mark.parametrize("channels_last, channels, serial", [(False, 1024, True), (True, 1024, False), (True, 8, True)])
def test_nchw_bilinear_upsampling_is_a_serial_loop_over_batch_and_channels(channels_last, channels, serial):
    """PyTorch's NCHW upsample_bilinear2d_out_frame runs one thread per output pixel, each looping over every
    batch x channel (UpSampleBilinear2d.cu); its channels-last kernel (16 channels or more) one thread per element.
    EfficientFormerV2's stride-2 attention upsamples (1024, 1024, 7, 7) to 14 x 14 at timm's batch."""
    b, h = 4, 7
    x = torch.empty(b, channels, h, h, device=META)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    t = counted(lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"), x)
    [(kernel, steps, nbytes, _)] = [op for op in t.op_list() if op[0] in ("serial", "elementwise")]
    assert nbytes == 4 * b * channels * (h * h + 4 * h * h)                  # read once, written at 2x2 the size
    if serial:
        assert (kernel, steps) == ("serial", b * channels)
    else:
        assert kernel == "elementwise"
