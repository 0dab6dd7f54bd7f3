"""zoo.select's ranking: the rank keys, the axes of the Pareto front it shows, the fallback when no candidate has
the asked key, the screen of candidates that cannot win an accuracy rank, and how close each row is to the next."""
from __future__ import annotations

from ..options.select import MEASURED_RANKS, RANKS, SEG_RANKS, TASK_RANKS  # noqa: F401 - the ranks, defined once
FALLBACK_RANK = "gmacs"         # what a rank no candidate has a value for falls back to (every row has GMACs)


def _rank_field(rank: str, stat: str) -> tuple[str, bool]:
    return {"top1": ("top1", True), "imagenet_v2": ("imagenet_v2", True), "gmacs": ("gmacs", False),
            "latency": (f"latency_ms_{stat}", False), "imgs_per_s": ("imgs_per_s", True),
            "box_ap": ("box_ap", True), "mask_ap": ("mask_ap", True),
            "miou": ("miou", True), "miou_ms": ("miou_ms", True)}[rank]


def _rank_key(rank: str, stat: str):
    field, higher = _rank_field(rank, stat)
    return lambda r: (r.get(field) is None, -(r.get(field) or 0) if higher else (r.get(field) or 0), r["model"])


def pareto_axes(rank: str, stat: str) -> tuple[str, str, bool]:
    """(x, y, lower x is better) of the front the output shows; it follows --rank's axis."""
    if rank == "latency":
        return f"latency_ms_{stat}", "top1", True
    if rank == "imgs_per_s":
        return "imgs_per_s", "top1", False
    return "gmacs", rank if rank in ("imagenet_v2", *TASK_RANKS, *SEG_RANKS) else "top1", True


def effective_rank(rows: list[dict], q) -> tuple[str, str | None]:
    """(the rank used, why it is not the one asked for): a key no candidate has falls back to GMACs."""
    field, _ = _rank_field(q.rank, q.latency_stat)
    if not rows or any(r.get(field) is not None for r in rows):
        return q.rank, None
    return FALLBACK_RANK, (f"no candidate has {field} at {q.request.img_size.label} px, so ranked by "
                           f"{FALLBACK_RANK} instead of {q.rank}")


def rank_screen(rows: list[dict], q, excluded: list[dict]) -> list[dict]:
    """Before timing: a model with no value for an accuracy rank cannot be the most accurate, but it is never
    dropped: it is marked `unranked` (why) and tried after the ranked ones, fewest GMACs first (timing_key);
    it is timed when none ranked above it fits (or with --time-all), and listed after the ranked ones.
    `excluded` is kept for the callers' signature (nothing is excluded here)."""
    field, _ = _rank_field(q.rank, q.latency_stat)
    if q.rank not in ("top1", "imagenet_v2") or not any(r.get(field) is not None for r in rows):
        return rows
    for row in rows:
        if row.get(field) is None:
            row["unranked"] = f"no {field} at {q.request.img_size.label} px to rank by: listed after the ranked models"
    return rows


def timing_key(rank: str, stat: str):
    """The order candidates are timed in: the rank's, then (ties and models without a value) fewest GMACs
    first, so cheap candidates are timed before expensive ones wherever the rank allows."""
    ranked = _rank_key(rank, stat)
    return lambda r: (*ranked(r)[:2], r.get("gmacs") or 0.0, r["model"])


def _versus_next(rows: list[dict]) -> None:
    """Ranked by latency: whether each row is ahead of the next beyond the noise (zoo.select.evidence.ahead)."""
    from .evidence import ahead

    for row, below in zip(rows, rows[1:]):
        if row.get("evidence") and below.get("evidence"):
            clear = ahead(row["evidence"], below["evidence"])
            load = " (timed under load)" if below["evidence"].get("loaded") and not clear else ""
            row["vs_next"] = f"{'ahead of' if clear else 'within noise of'} {below['model']}{load}"
