"""The dispatcher-level MAC counter: op rules by hand, no uncounted matmul/conv op in the registry,
real CPU == meta, training MACs of a tiny MLP by hand."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch
from torch import nn

import zoo
from zoo_cost import cost_of
from analysis.count import op_rules
from analysis.count.components import ComponentClassifier
from analysis.count.cost import cost_record, run_forward
from analysis.count.op_rules import MAC_RULES, DuplicateRuleError, is_matmul_or_conv_like, register_macs

aten = torch.ops.aten
META = dict(device="meta")


def macs_of(func, args, kwargs, out) -> int:
    return op_rules.rule_for(func)(*args, out=out, **kwargs)


def _macs(func, *args, **kwargs):
    out = func(*args, **kwargs)
    return macs_of(func, args, kwargs, out)


def test_matmul_rules_by_hand():
    a, b = torch.empty(5, 7, **META), torch.empty(7, 3, **META)
    assert _macs(aten.mm.default, a, b) == 5 * 7 * 3
    assert _macs(aten.addmm.default, torch.empty(3, **META), a, b) == 5 * 7 * 3
    x, y = torch.empty(4, 5, 7, **META), torch.empty(4, 7, 3, **META)
    assert _macs(aten.bmm.default, x, y) == 4 * 5 * 7 * 3
    assert _macs(aten.baddbmm.default, torch.empty(4, 5, 3, **META), x, y) == 4 * 5 * 7 * 3


@pytest.mark.parametrize("groups,c_in,c_out", [(1, 8, 16), (4, 8, 16), (8, 8, 8)])   # dense, grouped, depthwise
def test_conv_rules_by_hand(groups, c_in, c_out):
    x, w = torch.empty(2, c_in, 10, 10, **META), torch.empty(c_out, c_in // groups, 3, 3, **META)
    out = aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], groups)
    forward = 2 * c_out * 10 * 10 * (c_in // groups) * 9
    assert macs_of(aten.convolution.default, (x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], groups),
                   {}, out) == forward
    grad = torch.empty_like(out)
    args = (grad, x, w, [c_out], [1, 1], [1, 1], [1, 1], False, [0, 0], groups, [True, True, False])
    assert _macs(aten.convolution_backward.default, *args) == 2 * forward
    args = args[:-1] + ([False, True, False],)
    assert _macs(aten.convolution_backward.default, *args) == forward


def test_strided_and_transposed_conv_by_hand():
    x, w = torch.empty(1, 3, 224, 224, **META), torch.empty(768, 3, 16, 16, **META)
    args = (x, w, None, [16, 16], [0, 0], [1, 1], False, [0, 0], 1)
    assert _macs(aten.convolution.default, *args) == 196 * 768 * 3 * 256       # ViT-B/16 patch embedding
    x, w = torch.empty(1, 4, 5, 5, **META), torch.empty(4, 2, 3, 3, **META)   # (C_in, C_out, k, k)
    args = (x, w, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)
    assert _macs(aten.convolution.default, *args) == 4 * 25 * 2 * 9


SDPA_FORWARD = ["_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
                "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                "_scaled_dot_product_fused_attention_overrideable", "scaled_dot_product_attention",
                "_scaled_dot_product_attention_math"]
SDPA_BACKWARD = [n + "_backward" for n in SDPA_FORWARD[:5]]


@pytest.mark.parametrize("name", SDPA_FORWARD + SDPA_BACKWARD + ["_flash_attention_forward", "_flash_attention_backward",
                                                                  "_efficient_attention_forward",
                                                                  "_efficient_attention_backward"])
def test_every_sdpa_variant_has_a_rule(name):
    assert getattr(aten, name) in MAC_RULES and getattr(aten, name) in op_rules.ATTENTION_OPS


@pytest.mark.parametrize("name", SDPA_FORWARD[:5] + SDPA_BACKWARD)
def test_sdpa_rules_by_hand(name):
    b, h, n, s, e, ev = 2, 3, 5, 7, 8, 6                  # value head dim Ev != query/key head dim E
    q, k, v = torch.empty(b, h, n, e), torch.empty(b, h, s, e), torch.empty(b, h, s, ev)
    rule = MAC_RULES[getattr(aten, name)]
    args = (torch.empty(b, h, n, ev), q, k, v) if name.endswith("_backward") else (q, k, v)
    expected = b * h * n * s * (e + ev) * (2 if name.endswith("_backward") else 1)   # QK^T + AV
    assert rule(*args, out=None) == expected


def test_low_level_flash_kernel_uses_b_l_h_e_layout():
    q, k = torch.empty(2, 5, 3, 8), torch.empty(2, 7, 3, 8)        # (B, L, H, E)
    assert MAC_RULES[aten._flash_attention_forward](q, k, k, None, None, 5, 7, out=None) == 2 * 3 * 5 * 7 * 8 * 2


def test_registering_twice_raises():
    with pytest.raises(DuplicateRuleError) as raised:
        register_macs("mm")(lambda *a, **k: 0)
    assert str(raised.value) == "a MAC rule for aten.mm is already registered"


def test_a_rule_registered_as_attention_is_counted_as_attention():
    from analysis.count.op_rules import ATTENTION_OPS

    rule = lambda *a, **k: 7                                                     # noqa: E731
    assert aten._cdist_forward not in MAC_RULES
    try:
        register_macs("_cdist_forward", attention=True)(rule)
        assert MAC_RULES[aten._cdist_forward] is rule and aten._cdist_forward in ATTENTION_OPS
    finally:
        MAC_RULES.pop(aten._cdist_forward, None)
        ATTENTION_OPS.discard(aten._cdist_forward)


def test_name_classifier_for_uncounted_ops():
    assert is_matmul_or_conv_like("addmm") and is_matmul_or_conv_like("_scaled_dot_product_flash_attention_for_cpu")
    assert is_matmul_or_conv_like("convolution") and is_matmul_or_conv_like("_native_multi_head_attention")
    assert not any(map(is_matmul_or_conv_like, ["add", "gelu", "native_layer_norm", "upsample_bilinear2d", "_softmax"]))


def test_unruled_matmul_is_reported():
    class UsesMultiHeadAttention(nn.Module):     # eval + no_grad: torch's fused _native_multi_head_attention
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    model = UsesMultiHeadAttention().eval()
    counter, _, _ = run_forward(model, torch.randn(2, 5, 16), ComponentClassifier(model))
    assert "_native_multi_head_attention" in counter.uncounted_ops


@pytest.fixture(scope="module")
def registry_records():
    return {name: cost_of(name, train=True) for name in zoo.list_models()}


def stem_macs(name: str) -> int:
    """MACs of the first convolution (the stem or patch embedding), from its shape: out pixels x out channels x
    in channels / groups x kernel area. Its backward needs no gradient of the image."""
    spec = zoo.get_spec(name)
    model = zoo.create_model(name, device="meta")
    conv = next(m for m in model.modules() if isinstance(m, nn.Conv2d))
    out = conv(torch.empty(1, conv.in_channels, spec.native_size, spec.native_size, device="meta"))
    kh, kw = conv.kernel_size
    return out.numel() * conv.in_channels // conv.groups * kh * kw


@pytest.mark.parametrize("name", zoo.list_models())
def test_no_uncounted_matmul_or_conv_op_in_the_registry(name, registry_records):
    record = registry_records[name]                       # forward and training step, on meta
    assert record["uncounted_ops"] == []
    assert record["macs"] == sum(record["macs_by_component"].values()) > 0
    # every matmul and conv costs two of itself backward (input and weight gradients), but the stem's input
    # (the image) needs no gradient
    assert record["train_backward_macs"] == 2 * record["macs"] - stem_macs(name)
    assert record["train_macs"] == record["macs"] + record["train_backward_macs"]
    assert (record["attn_macs"] > 0) == (record["family"] not in
                                        ("convnext", "bit", "resnet", "regnet", "efficientnet"))


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 3), groups=st.sampled_from([1, 2, 4]), c_per_group=st.integers(1, 4),
       out_per_group=st.integers(1, 4), kernel=st.integers(1, 5), stride=st.integers(1, 3),
       padding=st.integers(0, 2), size=st.integers(5, 12), transposed=st.booleans())
def test_conv_rule_agrees_with_torch_flop_counter(batch, groups, c_per_group, out_per_group, kernel, stride,
                                                  padding, size, transposed):
    """An independent implementation (torch.utils.flop_counter, 2 FLOPs per MAC) on random convs."""
    from torch.utils.flop_counter import FlopCounterMode

    c_in, c_out = groups * c_per_group, groups * out_per_group
    x = torch.empty(batch, c_in, size, size, device="meta")
    w_shape = (c_in, out_per_group, kernel, kernel) if transposed else (c_out, c_per_group, kernel, kernel)
    args = (x, torch.empty(w_shape, device="meta"), None, [stride] * 2, [padding] * 2, [1, 1], transposed,
            [0, 0], groups)
    try:
        with FlopCounterMode(display=False) as reference:
            out = aten.convolution.default(*args)
    except RuntimeError:                                   # kernel larger than the padded input
        return
    assert macs_of(aten.convolution.default, args, {}, out) * 2 == reference.get_total_flops()


REAL_VS_META = [("vit_ti16", 64, {}), ("vit_ti16", 64, {"attn_impl": "math"}), ("deit_ti_distilled", 64, {}),
                ("swin_t", 64, {}), ("resnet50", 64, {}), ("convnext_t", 64, {}), ("beit_b16", 32, {}),
                ("eva02_b14", 28, {})]


@pytest.mark.parametrize("name,img_size,kwargs", REAL_VS_META)
def test_real_cpu_agrees_with_meta(name, img_size, kwargs):
    torch.manual_seed(0)
    real = cost_of(name, img_size=img_size, batch_size=2, device="cpu", **kwargs)
    meta = cost_of(name, img_size=img_size, batch_size=2, device="meta", **kwargs)
    for key in ("macs", "attn_macs", "macs_by_component", "train_macs", "attn_path", "act_peak_bytes",
                "train_act_peak_bytes", "uncounted_ops"):
        assert real[key] == meta[key], key


def test_sdpa_and_math_attention_count_the_same():
    fused = cost_of("vit_s16", train=True)
    math = cost_of("vit_s16", train=True, attn_impl="math")
    assert fused["attn_path"].startswith("fused:") and math["attn_path"] == "math:bmm"
    for key in ("macs", "attn_macs", "macs_by_component", "train_macs"):
        assert fused[key] == math[key], key


def test_training_macs_of_a_tiny_mlp_by_hand():
    n, a, b, c = 4, 6, 10, 3
    mlp = nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c))

    class Flat(nn.Module):                 # cost_record feeds images; flatten a (n, 1, 1, a)... keep it 2-D
        def __init__(self):
            super().__init__()
            self.mlp = mlp

        def forward(self, x):
            return self.mlp(x.reshape(x.shape[0], -1))

    model = Flat()
    model.in_chans = a
    record = cost_record(model, 1, batch_size=n).as_dict()
    forward = n * a * b + n * b * c
    # Backward: layer 2 needs grad_input (n.b.c) and grad_weight (n.b.c); layer 1 only grad_weight
    # (n.a.b): the input does not require grad. Not 3x the forward.
    assert record["macs"] * n == forward                    # per image
    assert record["train_macs"] * n == forward + 2 * n * b * c + n * a * b
    assert record["train_macs"] * n != 3 * forward


def test_low_level_attention_kernels_dense_and_packed_by_hand():
    """The CUDA flash / memory-efficient kernels take (B, L, H, E), or packed (total, H, E) with cumulative
    offsets (variable-length batches); their MACs are QK^T + AV per sequence (found by mutmut: untested)."""
    q, k, v = torch.empty(2, 5, 3, 4), torch.empty(2, 7, 3, 4), torch.empty(2, 7, 3, 6)   # B, L, H, E
    dense = 2 * 3 * 5 * 7 * (4 + 6)
    assert op_rules.flash_forward_macs(q, k, v, None, None) == dense
    assert op_rules.efficient_forward_macs(q, k, v, None, None, None) == dense
    assert op_rules.flash_backward_macs(None, q, k, v, None, None, None, None) == 2 * dense
    cum_q, cum_k = torch.tensor([0, 3, 8]), torch.tensor([0, 2, 6])   # sequences of 3 and 5 queries, 2 and 4 keys
    q, k, v = torch.empty(8, 3, 4), torch.empty(6, 3, 4), torch.empty(6, 3, 6)
    packed = 3 * (3 * 2 + 5 * 4) * (4 + 6)
    assert op_rules.flash_forward_macs(q, k, v, cum_q, cum_k) == packed
    assert op_rules.efficient_forward_macs(q[None], k[None], v[None], None, cum_q, cum_k) == packed
    assert op_rules.efficient_backward_macs(None, q[None], k[None], v[None], None, None, cum_q, cum_k) == 2 * packed
    with pytest.raises(NotImplementedError, match="real offsets"):
        op_rules.flash_forward_macs(q, k, v, cum_q.to("meta"), cum_k.to("meta"))
