"""Benchmark-suite form of the timm-protocol agreement check (see timm_protocol.py)."""

from timm_protocol import TOLERANCE, agreement


def test_deit_s_agrees_with_timm_protocol(benchmark, report_ratio):
    benchmark.group = "timm protocol agreement"
    result = benchmark.pedantic(agreement, kwargs=dict(model_name="deit_s", batch_size=8), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    report_ratio(f"deit_s bs8 ours / timm-protocol imgs_per_s: {result['ratio']:.3f} "
                 f"(threads={result['threads']}, tolerance +-{TOLERANCE:.0%})")
    assert result["within_tolerance"], result
