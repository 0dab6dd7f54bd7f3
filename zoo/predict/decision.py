"""Predictions as a decision across datasheet devices (`--predict L4,A100,H100`): each device's predicted rows
(zoo.predict.inference, one count of each forward shared by every device), per device the best batch under a
latency target, images per dollar at the prices the user gives, and per model and size the winner, with
whether the p10-p90 bands separate it from the runner-up.

Best batch: the largest power of two whose expected ms per batch stays within the target and whose serving
memory fits (analysis.batch_search). It is the best one, not only the largest: each kernel's time is
max(FLOPs / (e(FLOPs) x peak), bytes / bandwidth) + launch, and FLOPs grow in proportion to the batch, e(f)
grows with f, bytes grow at most in proportion and launches not at all, so seconds per image never rise with
the batch (analysis.predict.calibration).
"""
from __future__ import annotations

from typing import Callable, Optional

from analysis.predict.devices import DeviceSheet

from ..runs.request import Request
from .rows import PredictedRow, TooLarge, best_batch


class Counts:
    """Each forward counted once (zoo.predict.inference.gpu_forward) and priced on every device, in one setting:
    the form counted, TF32, the memory format, the torch release (None: installed) and the attention path."""

    def __init__(self, reparam: str = "fused", tf32: str | None = None, channels_last: bool = False,
                 torch: tuple[int, int] | None = None, attention: str | None = None):
        from .versions import attention_of, installed

        self.reparam, self.tf32, self.channels_last, self._counted = reparam, tf32, channels_last, {}
        self.torch = torch or installed()
        self.attention = attention_of(self.torch, attention)

    def row(self, request: Request, sheet: DeviceSheet, price_per_hour: float | None = None) -> PredictedRow:
        from .inference import gpu_forward, predict

        if request not in self._counted:
            self._counted[request] = gpu_forward(request, reparam=self.reparam,
                                                 fused_attention=self.attention == "fused")
        return predict(request, sheet, self.tf32, price_per_hour, self.channels_last, counted=self._counted[request],
                       torch=self.torch, attention=self.attention)


def ranked_value(row: dict, prices: dict[str, float] | None, band: str = "") -> float:
    """The figure devices are ranked by: images per dollar with prices, else images per second; `band` "_p10"
    or "_p90" for that edge of its band."""
    rate = row[f"imgs_per_s{band}"]
    return rate * 3600 / prices[row["device"]] if prices else rate


def decide(rows: list[dict], prices: dict[str, float] | None = None) -> dict:
    """One model and size on several devices (one row each): the winner by ranked_value among the rows that fit
    the device's memory and meet the latency target, the runner-up, their ratio, and band_separates: the
    winner's p10 above the runner-up's p90 (otherwise the prediction does not decide between them)."""
    first = rows[0]
    why_not = {r["device"]: "exceeds the device's memory" if not r["fits_memory"] else r["sweep_note"]
               for r in rows if not r["fits_memory"] or r.get("sweep_note")}
    ranked = sorted((r for r in rows if r["device"] not in why_not), key=lambda r: -ranked_value(r, prices))
    decision = {"predicted": True, "model": first["model"], "img_h": first["img_h"], "img_w": first["img_w"],
                "img_size": first["img_size"], "dtype": first["dtype"],
                "ranked_by": "imgs_per_usd" if prices else "imgs_per_s", "devices": [r["device"] for r in rows],
                "not_eligible": why_not, "winner": None, "runner_up": None, "band_separates": None}
    if not ranked:
        return decision
    winner = ranked[0]
    decision.update(winner=winner["device"], winner_batch_size=winner["batch_size"],
                    winner_value=ranked_value(winner, prices), winner_p10=ranked_value(winner, prices, "_p10"))
    if len(ranked) > 1:
        runner = ranked[1]
        decision.update(runner_up=runner["device"], runner_up_batch_size=runner["batch_size"],
                        runner_up_value=ranked_value(runner, prices),
                        runner_up_p90=ranked_value(runner, prices, "_p90"))
        decision["winner_over_runner_up"] = decision["winner_value"] / decision["runner_up_value"]
        decision["band_separates"] = decision["winner_p10"] > decision["runner_up_p90"]
    return decision


def device_rows(tasks, sheets: list[DeviceSheet], counts: Counts, prices: dict[str, float] | None = None,
                target_ms: float | None = None, on_row: Optional[Callable[[dict], None]] = None,
                skipped: list[str] | None = None) -> list[dict]:
    """Every device's rows: per (model, size) the best batch under target_ms when it is given, else one row per
    planned batch; device by device, in `sheets` order (prices by the sheets' names). on_row: called with each row
    as it is made; skipped: gets why, for each request too large to count (rows.TooLarge)."""
    rows, seen = [], set()
    for device in sheets:
        price = prices[device.name] if prices else None
        for task in tasks:
            request = task.request
            key = (device.name, task.request.model, request.img_size, None if target_ms is not None else request.batch_size)
            if key in seen:
                continue
            seen.add(key)
            try:
                if target_ms is not None:
                    row = best_batch(lambda b: counts.row(request.replace(batch_size=b), device, price), target_ms)
                else:
                    row = counts.row(request, device, price)
            except TooLarge as e:
                if skipped is None:
                    raise
                skipped.append(f"{e} on {device.name}")
                continue
            rows.append(row.to_json())
            if on_row:
                on_row(rows[-1])
    return rows


def decisions(rows: list[dict], prices: dict[str, float] | None = None, same_batch: bool = True) -> list[dict]:
    """decide() per model and size (and batch, when every device runs the same batches: no target)."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = (row["model"], row["img_h"], row["img_w"], row["batch_size"] if same_batch else None)
        groups.setdefault(key, []).append(row)
    return [decide(group, prices) for group in groups.values() if len(group) > 1]


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
