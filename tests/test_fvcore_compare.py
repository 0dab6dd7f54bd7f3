"""Other counters beside ours on real CPU models: what they miss is exactly the fused attention."""

import zoo
from analysis.count.other_counters import flop_counter_mode_comparison, fvcore_comparison


def test_fvcore_misses_exactly_the_fused_attention():
    result = fvcore_comparison(zoo.create_model("vit_ti16", img_size=64), 64)
    assert result["attn_path"].startswith("fused:")
    assert any("scaled_dot_product_attention" in op for op in result["fvcore_unsupported_ops"])
    assert result["missed_by_fvcore"] == result["attn_macs"] > 0
    assert result["explained"]


def test_fvcore_agrees_on_matmuls_when_attention_is_explicit():
    result = fvcore_comparison(zoo.create_model("vit_ti16", img_size=64, attn_impl="math"), 64)
    assert result["missed_by_fvcore"] == 0 and result["explained"]
    assert result["fvcore_outside_convention"] > 0          # fvcore also counts LayerNorm


def test_flop_counter_mode_misses_the_cpu_flash_kernel():
    result = flop_counter_mode_comparison(zoo.create_model("vit_ti16", img_size=64), 64)
    assert result["attn_path"] == "fused:_scaled_dot_product_flash_attention_for_cpu"
    assert result["missed_by_flop_counter"] == result["attn_macs"] > 0
