"""What timing one model gives: the latency/throughput result, typed (its fields carry meaning and unit),
and the ONNX Runtime backend's own fields (OnnxDetails; the backend is analysis.timing.onnx_runtime).

Latencies are per step of the whole batch; img/s counts images. A result whose every batch ran out of
memory has no speed fields (imgs_per_s None) and says why in `error`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from ..vocab import described


@dataclass
class TimingResult:
    backend: Optional[str] = described("runtime that ran the steps: eager (PyTorch) or onnxruntime")
    mode: Optional[str] = described("inference or train (forward + backward + SGD step)")
    requested_batch_size: Optional[int] = described("batch asked for", "images")
    ran_batch_size: Optional[int] = described("batch that ran after halving on out-of-memory", "images")
    error: Optional[str] = described("out-of-memory errors met before ran_batch_size fitted")
    oom_batch_sizes: Optional[list] = described("batches that ran out of memory")
    imgs_per_s: Optional[float] = described("batch x iterations / timed span (mean rate)", "images/s", required=True)
    imgs_per_s_p50: Optional[float] = described("ran_batch_size / median latency: the rate the median step gives",
                                                "images/s")
    latency_ms_mean: Optional[float] = described("mean step latency", "ms per batch")
    latency_ms_p50: Optional[float] = described("median step latency", "ms per batch", required=True)
    latency_ms_p90: Optional[float] = described("90th percentile step latency", "ms per batch")
    latency_ms_p99: Optional[float] = described("99th percentile step latency", "ms per batch")
    latency_ms_min: Optional[float] = described("fastest step", "ms per batch")
    latency_ms_max: Optional[float] = described("slowest step", "ms per batch")
    cv: Optional[float] = described("coefficient of variation of the step latencies (std / mean)")
    iters: Optional[int] = described("timed iterations", default=0)
    total_seconds: Optional[float] = described("timed span, first step's start to last step's end", "s")
    warmup_seconds: Optional[float] = described("warm-up wall time (includes torch.compile)", "s")
    latencies_ms: Optional[list] = described("every timed step", "ms per batch")
    device: Optional[str] = described("device that ran (cpu, cuda)")
    dtype: Optional[str] = described("autocast dtype (fp32, bf16, fp16)")
    threads: Optional[int] = described("CPU threads during the timing (torch's; ONNX Runtime's intra-op)")
    channels_last: Optional[bool] = described("input and weights in channels-last memory format")
    compile: Optional[Any] = described("torch.compile: false, or its mode")
    warmup: Optional[int] = described("untimed warm-up steps")
    min_iters: Optional[int] = described("minimum timed steps")
    min_seconds: Optional[float] = described("minimum timed span", "s")
    foreign_cpu_share: Optional[float] = described("share of the machine's CPU other processes used meanwhile",
                                                   "fraction")
    env: Optional[dict] = described("the machine's fingerprint (analysis.timing.fingerprint)")
    details: dict = field(default_factory=dict, metadata={"flattened": True})   # the backend's own fields

    def as_fields(self) -> dict:
        """The flat fields a row holds: these, then the backend's own."""
        fields = asdict(self)
        details = fields.pop("details")
        return {**fields, **details}


@dataclass
class OnnxDetails:
    onnx_exporter: Optional[str] = described("torch's ONNX exporter used: dynamo (torch.export) or torchscript")
    onnx_opset: Optional[int] = described("ONNX opset of the export (onnxruntime backend)")
    onnx_providers: Optional[list] = described("ONNX Runtime execution providers the session got, in order")
    export_seconds: Optional[float] = described("time torch's ONNX exporter took", "s")
    onnxruntime_version: Optional[str] = described("ONNX Runtime version")
    onnx_max_abs_diff: Optional[float] = described("largest |ONNX Runtime output - eager output| on the timed input")
    onnx_matches_eager: Optional[bool] = described("onnx_max_abs_diff <= 1e-3 x the largest eager output "
                                                   "(analysis.timing.onnx_runtime)")
