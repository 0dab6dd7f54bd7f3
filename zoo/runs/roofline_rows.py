"""Roofline estimates for the zoo's models: beside a timed row (this machine's measured GEMM peak and
memory bandwidth), or predicted for a datasheet device that is not here (`zoo.compare --predict`).

Predicted rows are never results rows: they carry `predicted: true` and the device's name, and are
printed, never written to results/. The estimate itself is analysis.roofline's.
"""
from __future__ import annotations

from analysis.count.cost import GpuEmulation, image_batch, run_forward
from analysis.roofline import CPU_LAUNCH_SECONDS, GPU_LAUNCH_SECONDS, roofline
from analysis.timing.devices import device_sheet, sheet_peak
from analysis.vocab import DTYPES, resolve_device

from ..errors import UsageError
from ..models.registry import create_model
from analysis.size import Size

ROOFLINE_FIELDS = ("roofline_ms", "roofline_compute_share", "roofline_memory_share", "roofline_launch_share")


def traffic_ops(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32",
                features: bool = False, gpu: bool = False) -> list[tuple[str, int, int, int]]:
    """(op_class, FLOPs, bytes, count) of one eager forward of the batch, counted on meta. With `gpu`, what
    a CUDA GPU runs: its fused SDPA kernels, and for bf16/fp16 torch.autocast over fp32 weights and input
    (timm's benchmark --amp), casts included (analysis.count.autocast)."""
    img_size = Size.of(img_size)
    held = "fp32" if gpu else dtype
    module = create_model(model, img_size=img_size, device="meta", dtype=DTYPES[held], features=features)
    emulation = GpuEmulation(None if dtype == "fp32" else DTYPES[dtype]) if gpu else None
    counter, _, _ = run_forward(module, image_batch(module, batch_size, img_size, DTYPES[held]), traffic=True,
                                gpu=emulation)
    return counter.traffic.op_list()


def measured_roofline(task, record: dict, peak: dict | None) -> dict:
    """Roofline fields of a timed eager inference row (`task`: a zoo.runs.tasks.Task) from this machine's
    peak and bandwidth (in `peak`, zoo.runs.peaks); none for training steps, ONNX Runtime, or a peak
    without a bandwidth."""
    if not peak or "mem_bandwidth" not in peak or task.train or task.backend != "eager":
        return {}
    batch = record.get("ran_batch_size") or task.batch_size
    launch = GPU_LAUNCH_SECONDS if resolve_device(task.device).type == "cuda" else CPU_LAUNCH_SECONDS
    estimate = roofline(traffic_ops(task.model, task.img_size, batch, task.dtype, task.features),
                        peak["peak_flops"], peak["mem_bandwidth"], launch)
    return {"mem_bandwidth": peak["mem_bandwidth"], **{k: estimate[k] for k in ROOFLINE_FIELDS}}


def predict(model: str, img_size: Size, batch_size: int, dtype: str, device: str, features: bool = False,
            tf32: bool = False) -> dict:
    """The roofline estimate of one forward on a datasheet device (analysis.timing.devices)."""
    sheet = device_sheet(device)
    peak = sheet_peak(sheet, dtype, tf32)
    estimate = roofline(traffic_ops(model, img_size, batch_size, dtype, features), peak, sheet.mem_bandwidth,
                        sheet.launch_seconds)
    h, w = Size.of(img_size).hw
    return {"predicted": True, "device": sheet.name, "model": model, "img_h": h, "img_w": w,
            "img_size": h if h == w else None, "batch_size": batch_size, "dtype": dtype, "features": features,
            "peak_flops": peak, "mem_bandwidth": sheet.mem_bandwidth, "launch_us": sheet.launch_seconds * 1e6,
            **{k: estimate[k] for k in ROOFLINE_FIELDS},
            "imgs_per_s": batch_size / estimate["roofline_ms"] * 1e3,
            "roofline_ms_by_op_class": estimate["roofline_ms_by_op_class"], "source": "; ".join(sheet.sources)}


def predicted_markdown(rows: list[dict]) -> str:
    """A table of predicted rows, headed so it cannot be taken for measurements."""
    if not rows:
        return "no predictions\n"
    first = rows[0]
    lines = [f"PREDICTED, not measured: roofline on {first['device']} from its datasheet "
             f"({first['peak_flops'] / 1e12:g} TFLOP/s {first['dtype']} dense, "
             f"{first['mem_bandwidth'] / 1e9:g} GB/s, {first['launch_us']:g} us per kernel); unfused eager traffic",
             "", "| model | size (px) | batch | predicted ms / batch | predicted img/s | compute-bound | "
             "memory-bound | launch |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        size = r["img_size"] or f"{r['img_h']}x{r['img_w']}"
        lines.append(f"| {r['model']} | {size} | {r['batch_size']} | {r['roofline_ms']:.3g} | {r['imgs_per_s']:.4g} | "
                     f"{r['roofline_compute_share']:.0%} | {r['roofline_memory_share']:.0%} | "
                     f"{r['roofline_launch_share']:.0%} |")
    return "\n".join(lines) + "\n"


def check_predict(device: str, dtype: str) -> None:
    """--predict: a device with a datasheet, and a tensor-core path for the dtype (UsageError, exit 2)."""
    try:
        sheet_peak(device_sheet(device), dtype)
    except ValueError as e:
        raise UsageError(f"--predict: {e}") from None


def print_predictions(plan, device: str, fmt: str) -> int:
    """zoo.compare --predict: one predicted row per planned (model, size, batch); skipped sizes listed."""
    import json
    import sys

    seen, rows = set(), []
    for task in plan.tasks:
        key = (task.model, task.img_size, task.batch_size)
        if key not in seen:
            seen.add(key)
            rows.append(predict(task.model, task.img_size, task.batch_size, task.dtype, device, task.features))
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif fmt == "csv":
        import csv

        columns = [k for k in rows[0] if not isinstance(rows[0][k], dict)] if rows else []
        writer = csv.DictWriter(sys.stdout, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        sys.stdout.write(predicted_markdown(rows))
        for row in plan.skipped:
            sys.stdout.write(f"skipped: {row['model']} {row['img_h']}x{row['img_w']}: {row['skipped']}\n")
    return 0
