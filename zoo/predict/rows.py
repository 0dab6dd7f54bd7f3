"""The predicted row (PredictedRow), the best batch under a latency target, and the tables zoo.compare and
zoo.select print of them: per planned batch or at the best batch, each marked when its serving memory exceeds the
device's, with images per dollar at a price the user gives; two devices' break-even price ratio and the winner per
model and size (decision_markdown); the row as results/predicted.jsonl keeps it (saved). zoo.compare's
output and saving: zoo.compare.predict; several devices: zoo.predict.decision."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from analysis.batch_search import largest_batch_where, powers_of_two

from .schema import FP32_CAVEAT

MAX_SWEEP_BATCH = 4096
GIB = 1024 ** 3


@dataclass(frozen=True)
class PredictedRow:
    """One predicted row (zoo.predict.inference.predict: per batch, latencies and memory per batch, img/s
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
    reparam: Optional[str] = None                  # the form counted where a model has two (zoo.predict.inference)
    task: Optional[str] = None                     # --detector / --segmenter: the whole model on this backbone

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
    from .inference import predict as predict_fields     # NB: imports torch; the report reads rows only

    return PredictedRow.of(predict_fields(request, device, tf32=tf32, price_per_hour=price_per_hour,
                                          channels_last=channels_last))


def best_batch(predict_at, target_ms: float) -> PredictedRow:
    """The row of the best batch under `target_ms`: the largest power of two whose expected ms per batch stays
    within it and which fits the device's memory (analysis.batch_search; why the largest is the best:
    zoo.predict.decision), marked with the target; batch 1's row, with a sweep_note, when even batch 1 misses the
    target or the memory. predict_at(batch) -> its PredictedRow."""
    rows: dict[int, PredictedRow] = {}

    def fits(batch: int) -> bool:
        rows[batch] = predict_at(batch)
        return rows[batch].latency_ms <= target_ms and rows[batch].fits_memory

    batch = largest_batch_where(fits, powers_of_two(MAX_SWEEP_BATCH))     # batch 1 is the first one tested
    note = None if batch else "batch 1 already misses the target or the memory"
    return dataclasses.replace(rows[batch or 1], sweep_note=note, sweep_latency_target_ms=target_ms)


def sweep(request, device: str, target_ms: float, price_per_hour: float | None = None, tf32: str | None = None,
          channels_last: bool = False) -> dict:
    """best_batch of `request` on `device`, each batch predicted afresh (zoo.predict.decision shares the counts);
    tf32 and channels_last passed on only where asked for."""
    options = {k: v for k, v in (("tf32", tf32), ("channels_last", channels_last)) if v}
    return best_batch(lambda b: predict(request.replace(batch_size=b), device, price_per_hour=price_per_hour,
                                        **options), target_ms).to_json()


def model_label(row: dict) -> str:
    """The backbone, and the detector or segmenter around it when the row is of the whole model."""
    return f"{row['model']} + {row['task']}" if row.get("task") else row["model"]


def saved(row: dict, by: str) -> dict:
    """The row as results/predicted.jsonl keeps it: every predicted field, who saved it (the command), archzoo's
    version."""
    from .._version import __version__

    return {**row, "saved_by": by, "archzoo_version": __version__}


def predicted_markdown(rows: list[dict]) -> str:
    """A table of predicted rows, headed so it cannot be taken for measurements."""
    from ..console.markdown import plain

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
             f"{first['calibration_source']}", *([FP32_CAVEAT.removeprefix("; ")] if first["dtype"] == "fp32" else []), ""]
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


def decision_markdown(decided: list[dict], target_ms: float | None) -> str:
    """The winner per model and size, headed so it cannot be taken for a measurement."""
    from ..console.markdown import markdown_table, plain

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
