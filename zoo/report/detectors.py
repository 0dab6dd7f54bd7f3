"""The whole-detector table: counted params and MACs of each detector row beside the published figures."""
from __future__ import annotations

from ..markdown import markdown_table as markdown
from ..models.detectors.published import NOT_PUBLISHED, PUBLISHED
from ..runs.schema import row_size
from .tables import g, mib


def detector_table(rows: list[dict]) -> str:
    headers = ["backbone", "detector", "res (px, H x W)", "params (M)", "published params (M)", "GMACs / image",
               "published GFLOPs (mmcv)", "ours / published", "attn GMACs", "backbone % of MACs",
               "train act peak (MiB, batch 1)", "published in"]
    body = []
    for r in sorted(rows, key=lambda r: (r["settings"]["detector"], r["model"], r["img_h"], r["img_w"])):
        detector = r["settings"]["detector"]
        params, gflops, source = PUBLISHED.get((r["model"], detector), (None, None, None))
        if source is None and any(r["model"].startswith(family) for family in NOT_PUBLISHED):
            source = "none found (NB above)"
        same_size = (r["img_h"], r["img_w"]) == (800, 1280)
        ratio = f"{r['macs'] / 1e9 / gflops:.3f}" if gflops and same_size else None
        body.append([r["model"], detector, row_size(r).label, f"{r['params'] / 1e6:.2f}", params, g(r["macs"], 1),
                     gflops, ratio, g(r["attn_macs"], 1), f"{100 * r['backbone_share']:.1f}",
                     mib(r.get("train_act_peak_bytes")), source])
    return markdown(headers, body)


def detector_notes(rows: list[dict]) -> list[str]:
    """Why a family's rows have no published column (what was searched), for the families present."""
    return [note for family, note in NOT_PUBLISHED.items() if any(r["model"].startswith(family) for r in rows)]
