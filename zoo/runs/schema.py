"""The results row, defined once: every field's name, type, unit and meaning, which fields make its key,
and the schema version. The store validates every row it writes and every line it reads against it;
`--resume`, the reports and `load_frame` identify rows with `row_key` / `measurement_key` from here.

Sizes: img_h and img_w always; img_size too for square inputs (what most tables show).
Conventions: MACs are per image everywhere (FLOPs = 2 x MACs); bytes and latencies are per batch
(what the batch needs at once, how long one step of the batch takes); img/s counts images.
"""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Optional

SCHEMA_VERSION = 2
KINDS = ("cost", "throughput")


class SchemaError(ValueError):
    """A row (or a line of a results file) that is not a valid row of this schema."""


def _f(doc: str, unit: str = "", key: bool = False, required: bool = False):
    """A field: `required` ones must be set on every measured (not skipped or failed) row."""
    return field(default=None, metadata={"doc": doc, "unit": unit, "key": key, "required": required})


@dataclass
class Row:
    """Fields every row has, whatever became of the measurement."""
    schema: int = _f("schema version of the row", required=True)
    kind: str = _f("cost (counted on meta) or throughput (timed)", key=True, required=True)
    model: str = _f("registry name, or timm:<name>", key=True, required=True)
    img_h: int = _f("input height", "px", key=True, required=True)
    img_w: int = _f("input width", "px", key=True, required=True)
    img_size: Optional[int] = _f("input side of a square input (img_h = img_w); null for H x W inputs", "px")
    batch_size: int = _f("batch asked for (throughput: see requested_batch_size / the batch that ran)", "images",
                         key=True, required=True)
    settings: dict = _f("what else makes two rows comparable: dtype, train, features, and for timing device, "
                        "threads, quick, channels_last, compile, backend", key=True, required=True)
    software: dict = _f("archzoo, torch and timm versions (part of the --resume key)", required=True)
    family: Optional[str] = _f("model family (vit, swin, convnext, ...)")
    env: Optional[dict] = _f("where it ran: device, or the machine's fingerprint for timed rows "
                             "(cpu_model and gpu_name are part of the key)")
    skipped: Optional[str] = _f("why the model cannot take this input (a rule, not a failure)")
    failed: Optional[str] = _f("the error, one line: type and message")
    failed_attempts: Optional[list] = _f("Ray: every attempt's error when the task was retried")
    traceback: Optional[str] = _f("last Python frames of a failed measurement (never C++ frames)")


@dataclass
class CostRow(Row):
    tokens: Optional[int] = _f("sequence length incl. class/distillation tokens; None without one global sequence")
    params: Optional[int] = _f("parameters (shared ones once)", required=True)
    trainable_params: Optional[int] = _f("parameters that require grad")
    params_by_component: Optional[dict] = _f("parameters per component")
    macs: Optional[int] = _f("multiply-accumulates of one forward pass", "MACs per image", required=True)
    attn_macs: Optional[int] = _f("attention's QK^T and AV", "MACs per image")
    attn_share: Optional[float] = _f("attn_macs / macs", "fraction")
    macs_by_component: Optional[dict] = _f("MACs per component (patch_embed, attn_proj, attn_matmul, mlp, conv, "
                                           "head, other)", "MACs per image")
    attn_path: Optional[str] = _f("how attention ran: fused:<kernel>, math:<ops>, mixed:..., none")
    act_peak_bytes: Optional[int] = _f("peak of live activations in one forward, weights and input excluded",
                                       "bytes per batch", required=True)
    act_peak_by_component: Optional[dict] = _f("live activation bytes per component at the peak", "bytes per batch")
    cuda_peak_bytes: Optional[int] = _f("torch.cuda.max_memory_allocated during the forward (CUDA only)",
                                        "bytes per batch")
    weight_bytes: Optional[int] = _f("parameters and buffers at the row's dtype", "bytes")
    serve_bytes: Optional[int] = _f("weight_bytes + act_peak_bytes: memory to serve the batch", "bytes per batch")
    train_serve_bytes: Optional[int] = _f("weights + gradients + optimizer state (train_optimizer) + "
                                          "train_act_peak_bytes", "bytes per batch")
    train_optimizer: Optional[str] = _f("optimizer whose state train_serve_bytes counts")
    features: Optional[list] = _f("feature extractor rows: [C, H, W] of each map it returns")
    dtype: Optional[str] = _f("dtype the model was counted in (fp32, bf16, fp16)")
    train_macs: Optional[int] = _f("forward + backward of one training step", "MACs per image")
    train_backward_macs: Optional[int] = _f("the backward part of train_macs", "MACs per image")
    train_act_peak_bytes: Optional[int] = _f("peak of live activations in a training step, gradients excluded",
                                             "bytes per batch")
    train_cuda_peak_bytes: Optional[int] = _f("CUDA allocator peak of a training step", "bytes per batch")
    uncounted_ops: Optional[list] = _f("matmul- or conv-like ops that ran without a MAC rule (should be empty)")


@dataclass
class ThroughputRow(Row):
    mode: Optional[str] = _f("inference or train (forward + backward + SGD step)")
    requested_batch_size: Optional[int] = _f("batch asked for", "images")
    ran_batch_size: Optional[int] = _f("batch that ran after halving on out-of-memory", "images")
    error: Optional[str] = _f("out-of-memory errors met before ran_batch_size fitted")
    oom_batch_sizes: Optional[list] = _f("batches that ran out of memory")
    imgs_per_s: Optional[float] = _f("batch x iterations / timed span (mean rate)", "images/s", required=True)
    latency_ms_mean: Optional[float] = _f("mean step latency", "ms per batch")
    latency_ms_p50: Optional[float] = _f("median step latency", "ms per batch", required=True)
    latency_ms_p90: Optional[float] = _f("90th percentile step latency", "ms per batch")
    latency_ms_p99: Optional[float] = _f("99th percentile step latency", "ms per batch")
    latency_ms_min: Optional[float] = _f("fastest step", "ms per batch")
    latency_ms_max: Optional[float] = _f("slowest step", "ms per batch")
    imgs_per_s_p50: Optional[float] = _f("ran_batch_size / median latency: the rate the median step gives",
                                         "images/s")
    cv: Optional[float] = _f("coefficient of variation of the step latencies (std / mean)")
    iters: Optional[int] = _f("timed iterations")
    total_seconds: Optional[float] = _f("timed span, first step's start to last step's end", "s")
    warmup_seconds: Optional[float] = _f("warm-up wall time (includes torch.compile)", "s")
    latencies_ms: Optional[list] = _f("every timed step", "ms per batch")
    device: Optional[str] = _f("device that ran (cpu, cuda)")
    dtype: Optional[str] = _f("autocast dtype (fp32, bf16, fp16)")
    threads: Optional[int] = _f("torch CPU threads during the timing")
    channels_last: Optional[bool] = _f("input and weights in channels-last memory format")
    compile: Optional[Any] = _f("torch.compile: false, or its mode")
    warmup: Optional[int] = _f("untimed warm-up steps")
    min_iters: Optional[int] = _f("minimum timed steps")
    min_seconds: Optional[float] = _f("minimum timed span", "s")
    foreign_cpu_share: Optional[float] = _f("share of the machine's CPU other processes used meanwhile", "fraction")
    noisy: Optional[bool] = _f("cv or foreign_cpu_share above the documented thresholds (zoo.runs.tasks)")
    attn_path: Optional[str] = _f("how attention ran on this device (one batch-1 forward, counted)")
    macs: Optional[int] = _f("forward MACs used for MFU", "MACs per image")
    flops_per_img: Optional[float] = _f("FLOPs of one step: 2 x macs, x3 for a training step", "FLOPs per image")
    peak_flops: Optional[float] = _f("measured dense GEMM peak of this machine, dtype and threads", "FLOP/s")
    peak_kernel: Optional[str] = _f("the GEMM probe that gave peak_flops (mm_<n>)")
    peak_method: Optional[str] = _f("how peak_flops was found: GEMM sizes probed, any left out by the time cap, "
                                    "seconds; and when the dtype has no fast GEMM on the device")
    peak_fast_gemm: Optional[bool] = _f("false: this dtype's GEMM runs at under half fp32's rate on the device, so mfu is "
                                        "not given")
    peak_probe: Optional[str] = _f("where peak_flops came from: kept from a quiet probe, probed now, or probed "
                                   "under load (others' CPU) and not kept")
    mfu: Optional[float] = _f("flops_per_img x imgs_per_s / peak_flops (never clipped)", "fraction")
    mfu_above_peak: Optional[bool] = _f("mfu > 1: a kernel faster than the GEMM probe, or fewer multiplies "
                                        "than nominal (Winograd)")
    datasheet_peak_flops: Optional[float] = _f("the device's datasheet dense peak (known GPUs)", "FLOP/s")
    mfu_datasheet: Optional[float] = _f("MFU against datasheet_peak_flops", "fraction")
    backend: Optional[str] = _f("runtime that ran the steps: eager (PyTorch) or onnxruntime")
    sweep_within_target: Optional[bool] = _f("batch sweep: this point's latency is within --latency-target-ms")
    serving_batch: Optional[bool] = _f("batch sweep: the largest batch within the latency target")
    latency_target_ms: Optional[float] = _f("batch sweep: the target", "ms per batch")
    onnx_exporter: Optional[str] = _f("torch's ONNX exporter used: dynamo (torch.export) or torchscript")
    onnx_opset: Optional[int] = _f("ONNX opset of the export (onnxruntime backend)")
    onnx_providers: Optional[list] = _f("ONNX Runtime execution providers, in order of preference")
    export_seconds: Optional[float] = _f("time torch's ONNX exporter took", "s")
    onnxruntime_version: Optional[str] = _f("ONNX Runtime version")
    onnx_max_abs_diff: Optional[float] = _f("largest |ONNX Runtime output - eager output| on one random input")
    onnx_matches_eager: Optional[bool] = _f("onnx_max_abs_diff <= 1e-3 x the largest eager output "
                                            "(analysis.timing.onnx_runtime)")


ROW_TYPES: dict[str, type[Row]] = {"cost": CostRow, "throughput": ThroughputRow}


def fields_of(kind: str) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(ROW_TYPES[kind])}


@typing.no_type_check
def _types(kind: str) -> dict[str, tuple[type, ...]]:
    """field -> accepted Python types (None included where Optional); bool is never an int here."""
    hints = typing.get_type_hints(ROW_TYPES[kind])
    accepted = {}
    for name, hint in hints.items():
        args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        accepted[name] = tuple(object if a is Any else type(None) if a is type(None) else a for a in args)
    return accepted


_TYPES = {kind: _types(kind) for kind in KINDS}


def _type_ok(value, accepted: tuple[type, ...]) -> bool:
    if object in accepted:
        return True
    if isinstance(value, bool):
        return bool in accepted
    if isinstance(value, int) and float in accepted:   # JSON writes 2.0 as 2.0, but 2 is a fine float
        return True
    return isinstance(value, accepted)


def validate(row: Any) -> dict:
    """Return `row` if it is a valid row of this schema, else raise SchemaError saying why (one line)."""
    if not isinstance(row, dict):
        raise SchemaError(f"a row is a JSON object, not {type(row).__name__}")
    if row.get("schema") != SCHEMA_VERSION:
        raise SchemaError(f"schema {row.get('schema')!r} is not this archzoo's ({SCHEMA_VERSION}); "
                          f"re-measure it with this version")
    kind = row.get("kind")
    if kind not in KINDS:
        raise SchemaError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    accepted, fields = _TYPES[kind], fields_of(kind)
    unknown = sorted(set(row) - set(accepted))
    if unknown:
        raise SchemaError(f"unknown field(s) for a {kind} row: {', '.join(unknown[:5])}")
    measured = row.get("skipped") is None and row.get("failed") is None
    for name, types_ok in accepted.items():
        value = row.get(name)
        if value is None:
            if fields[name].metadata["required"] and (measured or name in Row.__dataclass_fields__):
                raise SchemaError(f"{kind} row lacks {name}")
            continue
        if not _type_ok(value, types_ok):
            raise SchemaError(f"{name} is {type(value).__name__} {value!r:.40}, not {types_ok[0].__name__}")
    for name in ("img_h", "img_w", "batch_size"):
        if row[name] <= 0:
            raise SchemaError(f"{name} must be positive, not {row[name]}")
    square = row["img_h"] == row["img_w"]
    if row.get("img_size") != (row["img_h"] if square else None):
        raise SchemaError(f"img_size {row.get('img_size')!r} does not match img_h x img_w "
                          f"{row['img_h']}x{row['img_w']}")
    return row


def size_of(row: dict) -> int | tuple[int, int]:
    """The row's input size as the zoo takes it: an int for a square input, else (H, W)."""
    return row["img_size"] if row.get("img_size") is not None else (row["img_h"], row["img_w"])


def size_label(row: dict) -> str:
    """"224", or "800x1344" for an H x W input."""
    return str(row["img_size"]) if row.get("img_size") is not None else f"{row['img_h']}x{row['img_w']}"


def sort_key(row: dict) -> tuple:
    """Model names in natural order (vit_b8 < vit_b16), then size, then batch."""
    name = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", row["model"])]
    return (name, row["img_h"] * row["img_w"], row["img_h"], row["batch_size"])


def is_measured(row: dict) -> bool:
    return row.get("skipped") is None and row.get("failed") is None


def _frozen(mapping: dict | None) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in (mapping or {}).items()))


def measurement_key(row: dict) -> tuple:
    """What was measured, and where: a later row with this key replaces an earlier one in reports.

    Timed rows include the machine (CPU model and GPU name): one machine's numbers never replace
    another's. Software versions are not part of it (see row_key).
    """
    env = row.get("env") or {}
    machine = (env.get("cpu_model"), env.get("gpu_name")) if row["kind"] == "throughput" else ()
    return (row["kind"], row["model"], row["img_h"], row["img_w"], row["batch_size"], _frozen(row["settings"]),
            machine)


def row_key(row: dict) -> tuple:
    """measurement_key plus the software versions: --resume re-measures what newer software would
    count or time differently."""
    return measurement_key(row) + (_frozen(row["software"]),)


def schema_table() -> str:
    """The README's field table (markdown), generated from the dataclasses above."""
    lines = ["| field | rows | type | unit | key | meaning |", "|---|---|---|---|---|---|"]
    seen: dict[str, list[str]] = {}
    for kind in KINDS:
        for name in fields_of(kind):
            seen.setdefault(name, []).append(kind)
    for name, kinds in seen.items():
        kind = kinds[0]
        meta = fields_of(kind)[name].metadata
        type_name = "/".join(t.__name__ for t in _TYPES[kind][name] if t is not type(None)).replace("object", "any")
        rows = "all" if len(kinds) == len(KINDS) else ", ".join(kinds)
        lines.append(f"| `{name}` | {rows} | {type_name} | {meta['unit']} | {'yes' if meta['key'] else ''} | "
                     f"{meta['doc']} |")
    return "\n".join(lines) + "\n"
