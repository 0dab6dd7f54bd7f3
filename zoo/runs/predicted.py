"""zoo.compare --predict's output: predicted rows per planned batch, or per model and size the largest batch
under a latency target (--batch-sizes sweep), each marked when its serving memory exceeds the device's,
with images per dollar at a price the user gives. Printed, never written to results/."""
from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from typing import Optional

from analysis.batch_search import largest_batch_where, powers_of_two

from .roofline_rows import predict as predict_fields

MAX_SWEEP_BATCH = 4096
GIB = 1024 ** 3


@dataclass(frozen=True)
class PredictedRow:
    """One predicted row (zoo.runs.roofline_rows.predict: per batch, latencies and memory per batch, img/s
    counting images); never a measured row. The fields after fits_memory are there only when asked for."""
    predicted: bool
    device: str
    model: str
    img_h: int
    img_w: int
    img_size: Optional[int]
    batch_size: int
    dtype: str
    features: bool
    memory_format: str                # contiguous (NCHW) or channels_last
    conv_precision: str               # what cuDNN's convolutions run in (fp32 under TF32: tf32), and cuBLAS's matmuls
    matmul_precision: str
    peak_flops: float                 # the datasheet's dense peak of the matmuls' precision, FLOP/s
    conv_peak_flops: float            # and of the convolutions' precision
    mem_bandwidth: float              # bytes/s
    launch_us: float
    roofline_ms: float
    roofline_compute_share: float
    roofline_memory_share: float
    roofline_launch_share: float
    imgs_per_s: float                 # the calibrated expectation, and its held-out band
    imgs_per_s_p10: float
    imgs_per_s_p90: float
    band_from: str
    latency_ms: float
    roofline_imgs_per_s: float
    serve_bytes: int
    device_memory_bytes: Optional[float]
    fits_memory: bool
    roofline_ms_by_op_class: dict
    source: str
    calibration_source: str
    price_per_hour_usd: Optional[float] = None     # --price-per-hour
    imgs_per_usd: Optional[float] = None
    sweep_note: Optional[str] = None               # --batch-sizes sweep
    sweep_latency_target_ms: Optional[float] = None

    @classmethod
    def of(cls, fields: dict) -> PredictedRow:
        """The row holding `fields`; ValueError (one line) for a field it has not or one it lacks."""
        try:
            return cls(**fields)
        except TypeError as e:
            raise ValueError(f"not a predicted row: {e}") from None

    def to_json(self) -> dict:
        """Its fields, those only asked for left out when not asked for."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.default is dataclasses.MISSING or getattr(self, f.name) is not None}


def predict(request, device: str, price_per_hour: float | None = None, tf32: str | None = None,
            channels_last: bool = False) -> PredictedRow:
    """The predicted row of `request` (zoo.runs.request) on a datasheet `device`."""
    return PredictedRow.of(predict_fields(request, device, tf32=tf32, price_per_hour=price_per_hour,
                                          channels_last=channels_last))


def sweep(request, device: str, target_ms: float, price_per_hour: float | None = None, tf32: str | None = None,
          channels_last: bool = False) -> dict:
    """The largest power of two whose predicted latency per batch of `request` stays under `target_ms` and which
    fits the device's memory (analysis.batch_search): its row, or batch 1's, marked, if even that misses."""
    rows: dict[int, PredictedRow] = {}
    options = {k: v for k, v in (("tf32", tf32), ("channels_last", channels_last)) if v}   # only those asked for

    def fits(batch: int) -> bool:
        rows[batch] = predict(request.replace(batch_size=batch), device, price_per_hour=price_per_hour, **options)
        return rows[batch].latency_ms <= target_ms and rows[batch].fits_memory

    batch = largest_batch_where(fits, powers_of_two(MAX_SWEEP_BATCH))
    note = None if batch else "batch 1 already misses the target or the memory"
    return dataclasses.replace(rows[batch or 1], sweep_note=note, sweep_latency_target_ms=target_ms).to_json()


def predicted_rows(plan, device: str, sweep_target_ms: float | None = None,
                   price_per_hour: float | None = None, tf32: str | None = None,
                   channels_last: bool = False) -> list[dict]:
    seen, rows = set(), []
    for task in plan.tasks:
        key = (task.model, task.img_size) if sweep_target_ms is not None else (task.model, task.img_size,
                                                                                 task.batch_size)
        if key in seen:
            continue
        seen.add(key)
        if sweep_target_ms is not None:
            rows.append(sweep(task.request, device, sweep_target_ms, price_per_hour, tf32, channels_last))
        else:
            rows.append(predict(task.request, device, price_per_hour, tf32, channels_last).to_json())
    return rows


def predicted_markdown(rows: list[dict]) -> str:
    """A table of predicted rows, headed so it cannot be taken for measurements."""
    if not rows:
        return "no predictions\n"
    first = rows[0]
    p10, p90 = first["imgs_per_s_p10"] / first["imgs_per_s"], first["imgs_per_s_p90"] / first["imgs_per_s"]
    memory = first["device_memory_bytes"]
    lines = [f"PREDICTED, not measured: {first['device']} ({precision_text(first)} dense, "
             f"{first['mem_bandwidth'] / 1e9:g} GB/s"
             + (f", {memory / 1e9:g} GB" if memory else "") + "), eager PyTorch"
             + (" under autocast" if first["dtype"] != "fp32" else "")
             + (", channels-last" if first.get("memory_format") == "channels_last" else "")
             + f". Expected img/s (mean over batches) calibrated on published measurements, band p10-p90 = "
             f"x{p10:.2f}-x{p90:.2f} (held-out error); roofline = datasheet bound. Calibration: "
             f"{first['calibration_source']}", ""]
    price = "price_per_hour_usd" in first
    head = ("| model | size (px) | batch | expected img/s (p10-p90) | ms / batch | roofline img/s | serving GiB | "
            "fits |" + (" img per USD |" if price else ""))
    lines += [head, "|---|---|---:|---:|---:|---:|---:|---|" + ("---:|" if price else "")]
    for r in rows:
        size = r["img_size"] or f"{r['img_h']}x{r['img_w']}"
        fits = "yes" if r["fits_memory"] else "NO: exceeds device memory"
        batch = f"{r['batch_size']}" + (" (misses the target)" if r.get("sweep_note") else "")
        line = (f"| {r['model']} | {size} | {batch} | {r['imgs_per_s']:.4g} ({r['imgs_per_s_p10']:.4g}-"
                f"{r['imgs_per_s_p90']:.4g}) | {r['latency_ms']:.3g} | {r['roofline_imgs_per_s']:.4g} | "
                f"{r['serve_bytes'] / GIB:.2f} | {fits} |")
        lines.append(line + (f" {r['imgs_per_usd']:.4g} |" if price else ""))
    if "sweep_latency_target_ms" in first:
        lines += ["", f"batch: the largest power of two whose predicted ms / batch stays under "
                      f"{first['sweep_latency_target_ms']:g} ms and whose serving memory fits"]
    return "\n".join(lines) + "\n"


def precision_text(row: dict) -> str:
    """'convs tf32 156 TFLOP/s, matmuls fp32 19.5 TFLOP/s', or one figure where both run in one precision."""
    conv, matmul = row.get("conv_precision", row["dtype"]), row.get("matmul_precision", row["dtype"])
    if conv == matmul:
        return f"{row['peak_flops'] / 1e12:g} TFLOP/s {matmul}"
    return (f"convs {conv} {row['conv_peak_flops'] / 1e12:g} TFLOP/s, matmuls {matmul} "
            f"{row['peak_flops'] / 1e12:g} TFLOP/s")


def break_even(first: list[dict], second: list[dict]) -> list[dict]:
    """Per (model, size, batch) predicted on two devices: the price ratio first / second at which both give
    the same images per dollar (= their expected img/s ratio), and its range over both bands (the first's
    p10 over the second's p90, the first's p90 over the second's p10)."""
    out = []
    for a, b in zip(first, second):
        out.append({"predicted": True, "model": a["model"], "img_h": a["img_h"], "img_w": a["img_w"],
                    "batch_size": a["batch_size"], "devices": [a["device"], b["device"]],
                    "break_even_price_ratio": a["imgs_per_s"] / b["imgs_per_s"],
                    "break_even_low": a["imgs_per_s_p10"] / b["imgs_per_s_p90"],
                    "break_even_high": a["imgs_per_s_p90"] / b["imgs_per_s_p10"]})
    return out


def break_even_markdown(rows: list[dict]) -> str:
    a, b = rows[0]["devices"]
    lines = ["", f"PREDICTED break-even: {a} is worth its price while it costs less than this many times {b}'s "
                 "per hour (expected img/s ratio; range from both bands: a margin inside it is not decided)", "",
             "| model | size (px) | batch | break-even price ratio | range |", "|---|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['img_h']}x{r['img_w']} | {r['batch_size']} | "
                     f"{r['break_even_price_ratio']:.2f} | {r['break_even_low']:.2f}-{r['break_even_high']:.2f} |")
    return "\n".join(lines) + "\n"


def print_predictions(plan, device: str, fmt: str, sweep_target_ms: float | None = None,
                      price_per_hour: float | None = None, tf32: str | None = None,
                      channels_last: bool = False) -> int:
    """zoo.compare --predict: the rows in `fmt`; skipped sizes listed under a markdown table. Two devices
    ("A100,L4"): each one's rows (no sweep: the same batches on both), then their break-even price ratios."""
    devices = [d.strip() for d in device.split(",")]
    if len(devices) > 1:
        per_device = [predicted_rows(plan, d, None, price_per_hour, tf32, channels_last) for d in devices[:2]]
        even = break_even(*per_device)
        if fmt == "json":
            sys.stdout.write(json.dumps({"rows": per_device[0] + per_device[1], "break_even": even}, indent=2) + "\n")
        else:
            sys.stdout.write("\n".join(predicted_markdown(rows) for rows in per_device) + break_even_markdown(even))
        return 0
    rows = predicted_rows(plan, device, sweep_target_ms, price_per_hour, tf32, channels_last)
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
