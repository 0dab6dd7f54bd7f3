"""The whole-detector tables: counted params and MACs of each detector row (at its own batch and dtype) beside
the published figures of its recipe, and every row of the published COCO tables beside the count that
matches it (zoo.models.detectors.published)."""
from __future__ import annotations

from ..console.markdown import markdown_table as markdown, mib
from ..models.detectors.published import NOT_PUBLISHED, PUBLISHED, PUBLISHED_SIZE, coco_rows, task_fields
from ..store.schema import row_size
from .tables import g

PUBLISHED_LABEL = f"{PUBLISHED_SIZE[0]}x{PUBLISHED_SIZE[1]}"


def _published_cells(row: dict, gflops) -> tuple[str | None, str | None]:
    """(published GFLOPs, ours / published): the ratio only at the size the figure was measured at; at any
    other size the figure is named with its size and no ratio is given."""
    if not gflops:
        return None, None
    if (row["img_h"], row["img_w"]) != PUBLISHED_SIZE:
        return f"{gflops} (at {PUBLISHED_LABEL})", None
    return str(gflops), f"{row['macs'] / 1e9 / gflops:.3f}"


def _ap(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def detector_table(rows: list[dict]) -> str:
    headers = ["backbone", "detector", "res (px, H x W)", "batch", "dtype", "params (M)", "published params (M)",
               "GMACs / image", "published GFLOPs (mmcv)", "ours / published", "attn GMACs / image",
               "backbone % of MACs", "train act peak (MiB / batch)", "box AP (published)", "mask AP (published)",
               "published in"]
    body = []
    for r in sorted(rows, key=lambda r: (r["settings"]["detector"], r["model"], r["img_h"], r["img_w"],
                                         r["batch_size"], r["settings"]["dtype"])):
        detector = r["settings"]["detector"]
        params, gflops, source = PUBLISHED.get((r["model"], detector), (None, None, None))
        if source is None and any(r["model"].startswith(family) for family in NOT_PUBLISHED):
            source = "params/FLOPs: none found (NB above)"
        task = task_fields(r["model"], detector)
        ap_from = task["task_published"]["source"] if task["task_published"] else None
        if ap_from and ap_from == source:
            source = f"params, FLOPs and AP: {task['task_recipe']}"
        else:
            source = "; ".join(filter(None, [source, f"AP: {task['task_recipe'] or task['task_unmatched']}"]))
        shown_gflops, ratio = _published_cells(r, gflops)
        body.append([r["model"], detector, row_size(r).label, r["batch_size"], r["settings"]["dtype"],
                     f"{r['params'] / 1e6:.2f}", params, g(r["macs"], 1), shown_gflops, ratio, g(r["attn_macs"], 1),
                     f"{100 * r['backbone_share']:.1f}", mib(r.get("train_act_peak_bytes")), _ap(task["box_ap"]),
                     _ap(task["mask_ap"]), source])
    return markdown(headers, body)


def _count_at_published_size(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(backbone, detector) -> the batch-1 fp32 row counted at the size the tables' FLOPs were measured at."""
    found = {}
    for r in rows:
        if (r["img_h"], r["img_w"]) == PUBLISHED_SIZE and r["batch_size"] == 1 and r["settings"]["dtype"] == "fp32":
            found[(r["model"], r["settings"]["detector"])] = r
    return found


def published_table(rows: list[dict]) -> str:
    """Every row of the packaged COCO tables, each beside our batch-1 fp32 count of the same backbone and heads
    at 800 x 1280 when results/ holds one (no count for heads archzoo does not build, or backbones it lacks)."""
    ours = _count_at_published_size(rows)
    headers = ["published as", "backbone", "detector (heads)", "schedule", "pretraining", "box AP", "mask AP",
               "test input (px)", "params (M)", f"GFLOPs (mmcv, at {PUBLISHED_LABEL})",
               f"our GMACs (at {PUBLISHED_LABEL})", "ours / published", "source (repo@commit file:line)"]
    body = []
    for p in coco_rows():
        counted = ours.get((p["backbone"], p["detector"]))
        ratio = f"{counted['macs'] / 1e9 / p['gflops']:.3f}" if counted and p["gflops"] else None
        body.append([p["published_name"], p["backbone"], p["detector"], p["schedule"], p["pretraining"],
                     _ap(p["box_ap"]), _ap(p["mask_ap"]), p["eval_size"], p["params_m"], p["gflops"],
                     g(counted["macs"], 1) if counted else None, ratio, p["source"]])
    return markdown(headers, body)


def detector_notes(rows: list[dict]) -> list[str]:
    """Why a family's rows have no published column (what was searched), for the families present."""
    return [note for family, note in NOT_PUBLISHED.items() if any(r["model"].startswith(family) for r in rows)]
