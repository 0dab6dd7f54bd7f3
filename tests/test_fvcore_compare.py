"""Other counters beside ours on real CPU models: what they miss is exactly the fused attention.
fvcore is optional (only this side-by-side comparison imports it, lazily): its tests skip without it."""
import subprocess
import sys

import pytest
from cli import HANG_GUARD_S

import zoo
from analysis.count.other_counters import flop_counter_mode_comparison, fvcore_comparison

try:
    import fvcore  # noqa: F401
    HAS_FVCORE = True
except ImportError:
    HAS_FVCORE = False
needs_fvcore = pytest.mark.skipif(not HAS_FVCORE, reason="fvcore is not installed (pip install fvcore); only the "
                                                           "side-by-side comparison uses it")


@needs_fvcore
def test_fvcore_misses_exactly_the_fused_attention():
    result = fvcore_comparison(zoo.create_model("vit_ti16", img_size=64), 64)
    assert result["attn_path"].startswith("fused:")
    assert any("scaled_dot_product_attention" in op for op in result["fvcore_unsupported_ops"])
    assert result["missed_by_fvcore"] == result["attn_macs"] > 0
    assert result["explained"]


@needs_fvcore
def test_fvcore_agrees_on_matmuls_when_attention_is_explicit():
    result = fvcore_comparison(zoo.create_model("vit_ti16", img_size=64, attn_impl="math"), 64)
    assert result["missed_by_fvcore"] == 0 and result["explained"]
    assert result["fvcore_outside_convention"] > 0          # fvcore also counts LayerNorm


def test_flop_counter_mode_misses_the_cpu_flash_kernel():
    result = flop_counter_mode_comparison(zoo.create_model("vit_ti16", img_size=64), 64)
    assert result["attn_path"] == "fused:_scaled_dot_product_flash_attention_for_cpu"
    assert result["missed_by_flop_counter"] == result["attn_macs"] > 0


def test_nothing_but_the_comparison_imports_fvcore():
    code = ("import sys; sys.modules['fvcore'] = None\n"        # as if it were not installed
            "import analysis, analysis.count.other_counters, zoo, zoo.compare, zoo.select, zoo.report.build\n"
            "try:\n    analysis.fvcore_comparison\nexcept AttributeError:\n    sys.exit(3)\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=HANG_GUARD_S).returncode == 0
