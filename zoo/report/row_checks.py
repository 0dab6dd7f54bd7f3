"""Which stored rows the report can use, each row judged alone: a row the schema accepts but the report cannot show
(a detector or segmenter archzoo does not build, a whole-model row without the figures its table computes with) is
named by file, line and why, and skipped; every other row is shown."""
from __future__ import annotations

from ..models.detectors.specs import DETECTOR_NAMES
from ..models.segmenters.specs import SEGMENTERS
from ..store.store import BadLine, ResultStore

# the figures the detector table computes with (zoo.report.detectors), beyond the schema's required ones
DETECTOR_FIELDS = ("params", "macs", "attn_macs", "backbone_share")


def why_unusable(row: dict) -> str | None:
    """Why the report cannot show this schema-valid row, or None."""
    settings, measured = row["settings"], "failed" not in row and "skipped" not in row
    detector, segmenter = settings.get("detector"), settings.get("segmenter")
    if detector is not None and detector not in DETECTOR_NAMES:
        return f"detector {detector!r} is none archzoo builds ({', '.join(DETECTOR_NAMES)})"
    if segmenter is not None and segmenter not in SEGMENTERS:
        return f"segmenter {segmenter!r} is none archzoo builds ({', '.join(SEGMENTERS)})"
    missing = [f for f in DETECTOR_FIELDS if row.get(f) is None] if detector and measured else []
    return f"a measured detector row without {', '.join(missing)}" if missing else None


def usable_rows(store: ResultStore, kind: str) -> list[dict]:
    """The valid rows of `kind` the report can show, in file order; each other one joins store.bad_lines."""
    kept = []
    for number, row in store.numbered_rows(kind, warn=False):
        why = why_unusable(row)
        if why:
            store.bad_lines.append(BadLine(store.path(kind), number, why))
        else:
            kept.append(row)
    return kept
