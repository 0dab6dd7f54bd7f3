"""The tables zoo.compare and zoo.select print of predicted rows, headed so they cannot be taken for measurements:
per planned batch or at the best batch, each marked when its memory exceeds the device's, with images per dollar at
a price the user gives; two devices' break-even price ratio; the winner per model and size; a training step with
its schedule's hours and dollars. Text only: the commands print it."""
from __future__ import annotations

from analysis.units import GIB

from ..console.markdown import markdown_table, plain
from .rows import model_label


def predicted_markdown(rows: list[dict]) -> str:
    """A table of predicted rows, headed so it cannot be taken for measurements."""
    if not rows:
        return "no predictions\n"
    first = rows[0]
    p10, p90 = first["imgs_per_s_p10"] / first["imgs_per_s"], first["imgs_per_s_p90"] / first["imgs_per_s"]
    memory = first["device_memory_bytes"]
    lines = [f"PREDICTED, not measured: {first.get('part') or first['device']} ({precision_text(first)} dense, "
             f"{first['mem_bandwidth'] / 1e9:g} GB/s"
             + (f", {memory / 1e9:g} GB" if memory else "") + "), eager PyTorch"
             + (" under autocast" if first["dtype"] != "fp32" else "")
             + (", channels-last" if first.get("memory_format") == "channels_last" else "")
             + (f", torch {first['torch']}, attention {first['attention']}" if first.get("torch") else "")
             + f". Expected img/s (mean over batches) calibrated on published measurements, band p10-p90 = "
             f"x{p10:.2f}-x{p90:.2f} ({first['band_from']}); roofline = datasheet bound. Calibration: "
             f"{first['calibration_source']}", ""]
    price = "price_per_hour_usd" in first
    head = ("| model | size (px) | batch | expected img/s (p10-p90) | expected ms / batch (mean) | roofline img/s | "
            "serving GiB / batch | fits |" + (" price (USD / h) | img per USD (expected) |" if price else ""))
    lines += [head, "|---|---|---:|---:|---:|---:|---:|---|" + ("---:|---:|" if price else "")]
    for r in rows:
        size = r["img_size"] or f"{r['img_h']}x{r['img_w']}"
        fits = "yes" if r["fits_memory"] else "NO: exceeds device memory"
        batch = f"{r['batch_size']}" + (" (misses the target)" if r.get("sweep_note") else "")
        line = (f"| {model_label(r)} | {size} | {batch} | {plain(r['imgs_per_s'])} ({plain(r['imgs_per_s_p10'])}-"
                f"{plain(r['imgs_per_s_p90'])}) | {plain(r['latency_ms'], 3)} | {plain(r['roofline_imgs_per_s'])} | "
                f"{r['serve_bytes'] / GIB:.2f} | {fits} |")
        lines.append(line + (f" {r['price_per_hour_usd']:g} | {plain(r['imgs_per_usd'])} |" if price else ""))
    if "sweep_latency_target_ms" in first:
        lines += ["", f"batch: the largest power of two whose expected (mean) ms / batch stays within "
                      f"{first['sweep_latency_target_ms']:g} ms and whose serving memory fits (the best batch: "
                      f"expected seconds per image never rise with the batch)"]
    return "\n".join(lines) + "\n"


def precision_text(row: dict) -> str:
    """'convs tf32 156 TFLOP/s, matmuls fp32 19.5 TFLOP/s', or one figure where both run in one precision."""
    conv, matmul = row.get("conv_precision", row["dtype"]), row.get("matmul_precision", row["dtype"])
    if conv == matmul:
        return f"{row['peak_flops'] / 1e12:g} TFLOP/s {matmul}"
    return (f"convs {conv} {row['conv_peak_flops'] / 1e12:g} TFLOP/s, matmuls {matmul} "
            f"{row['peak_flops'] / 1e12:g} TFLOP/s")


def break_even_markdown(rows: list[dict]) -> str:
    a, b = rows[0]["devices"]
    lines = ["", f"PREDICTED break-even: {a} is worth its price while it costs less than this many times {b}'s "
                 "per hour (expected img/s ratio; range from both bands: a margin inside it is not decided)", "",
             "| model | size (px) | batch | break-even price ratio | range |", "|---|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['img_h']}x{r['img_w']} | {r['batch_size']} | "
                     f"{r['break_even_price_ratio']:.2f} | {r['break_even_low']:.2f}-{r['break_even_high']:.2f} |")
    return "\n".join(lines) + "\n"


def decision_markdown(decided: list[dict], target_ms: float | None) -> str:
    """The winner per model and size, headed so it cannot be taken for a measurement."""
    usd = decided[0]["ranked_by"] == "imgs_per_usd"
    what = "img per USD (expected)" if usd else "img/s (expected)"
    where = (f"each device at its best batch within {target_ms:g} ms (expected, mean) per batch" if target_ms
             else "each device at the same batch")
    cells = []
    for d in decided:
        size = d["img_size"] or f"{d['img_h']}x{d['img_w']}"
        if d["winner"] is None:
            cells.append([d["model"], size, "none eligible", None, None, None, None, None, None, None])
            continue
        runner = d["runner_up"]
        cells.append([d["model"], size, d["winner"], d["winner_batch_size"], plain(d["winner_value"]),
                      runner, d.get("runner_up_batch_size"), plain(d["runner_up_value"]) if runner else None,
                      f"{d['winner_over_runner_up']:.2f}" if runner else None,
                      None if runner is None else "yes" if d["band_separates"] else "no: not decided"])
    lines = ["", f"PREDICTED decision, not measured: per model and size the device with the most "
                 f"{'images per dollar' if usd else 'images per second'}, {where}. 'band separates': the winner's "
                 f"p10 is above the runner-up's p90 (otherwise the prediction does not decide between them).", "",
             markdown_table(["model", "size (px)", "winner", "batch", what, "runner-up", "batch", what,
                             "winner / runner-up", "band separates"], cells).rstrip("\n")]
    lines += [f"not eligible: {d['model']} on {device}: {why}" for d in decided
              for device, why in d["not_eligible"].items()]
    return "\n".join(lines) + "\n"


def train_markdown(rows: list[dict]) -> str:
    first = rows[0]
    tpu = first.get("train_device_kind") == "tpu"
    unit = "chip" if tpu else "GPU"
    lines = [f"PREDICTED, not measured: a training step on {first.get('part') or first['device']} ({first['dtype']}"
             + (" autocast" if first["dtype"] != "fp32" else "") + f", {first['train_optimizer']}, "
             f"{first['train_optimizer_impl']}), forward + backward + optimizer step, expected img/s with its "
             f"p10-p90 band ({first['train_band_from']}). Calibration: {first['train_calibration_source']}", ""]
    hours = "train_steps" in first
    price = "train_usd" in first
    head = f"| model | size (px) | batch / {unit} | train img/s (p10-p90) | ms / step | train GiB | fits |"
    rule = "|---|---|---:|---:|---:|---:|---|"
    if hours:
        head += f" steps | all-reduce ms | wall hours (band) | {unit}-hours (band) |"
        rule += "---:|---:|---:|---:|"
    if "train_core_days" in first:
        head += " TPU core-days (band) |"
        rule += "---:|"
    if price:
        head += " USD (band) |"
        rule += "---:|"
    lines += [head, rule]
    for r in rows:
        line = (f"| {model_label(r)} | {r['img_h']}x{r['img_w']} | {r['batch_size']} | {r['train_imgs_per_s']:.4g} "
                f"({r['train_imgs_per_s_p10']:.4g}-{r['train_imgs_per_s_p90']:.4g}) | {r['train_step_ms']:.4g} | "
                f"{r['train_gpu_bytes'] / GIB:.2f} | {_fits(r['train_fits_memory'])} |")
        if hours:
            line += (f" {r['train_steps']:,} | {r['train_allreduce_ms']:.3g} | {r['train_wall_hours']:.4g} "
                     f"({r['train_wall_hours_fast']:.4g}-{r['train_wall_hours_slow']:.4g}) | "
                     f"{r['train_device_hours']:.4g} ({r['train_device_hours_fast']:.4g}-"
                     f"{r['train_device_hours_slow']:.4g}) |")
        if "train_core_days" in r:
            line += f" {r['train_core_days']:.4g} ({r['train_core_days_fast']:.4g}-{r['train_core_days_slow']:.4g}) |"
        if price:
            line += f" {r['train_usd']:,.0f} ({r['train_usd_fast']:,.0f}-{r['train_usd_slow']:,.0f}) |"
        lines.append(line)
    if hours:
        lines += ["", f"{first['gpus']} {unit}{'s' if first['gpus'] > 1 else ''}, global batch {first['train_global_batch']}; the all-reduce (ring, "
                      "2(K-1)/K x fp32 gradient bytes at the link's per-direction datasheet bandwidth) is added to "
                      "each step, not overlapped with the backward (overlapped, the wall hours would be "
                      + ", ".join(f"{r['train_wall_hours_overlapped']:.4g}" for r in rows) + ")"]
    return "\n".join(lines) + "\n"


def _fits(fits: bool | None) -> str:
    """'yes', 'NO', or '-' where it is not modelled (a TPU: XLA plans its own memory)."""
    return "-" if fits is None else "yes" if fits else "NO"
