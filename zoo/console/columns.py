"""The one column table: each figure zoo.compare's table and the report's cost tables show, by its row field, with
its header and its formatter, every formatter made by one factory (`figure`) from the unit the row schema gives the
field (zoo.store.schema, analysis.units.SHOWN), so no table restates a unit. A new cost column is its row field
(with its unit) plus one entry in COLUMNS; zoo.select's answer keeps figures of its own (zoo.answers.text)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from analysis.units import SHOWN

from .markdown import feature_maps


@dataclass(frozen=True)
class Column:
    field: str
    header: str
    format: Optional[Callable[[object], Optional[str]]] = str   # None: the cell reads more of the record (compare's)
    report: bool = False               # also in the report's cost table (zoo.report.tables), whose rows are batch 1

    def at_batch(self, batch: int) -> Column:
        """The column of a table whose rows all hold one batch: "act peak (MiB, batch 1)"."""
        return dataclasses.replace(self, header=self.header.replace(" / batch)", f", batch {batch})"))


def unit_of(field: str) -> str:
    """The unit the row schema gives `field` ("" for a count, a ratio or text)."""
    from ..store.schema import KINDS, fields_of

    for kind in KINDS:
        found = fields_of(kind).get(field)
        if found is not None:
            return found.metadata.get("unit", "")
    return ""


def figure(field: str, digits: int = 2, scale: float | None = None, times: int = 1, suffix: str = "") -> Callable:
    """The one formatter factory: `times` x the value (2 for FLOPs of MACs) in the unit a table shows `field`'s
    schema unit in (SHOWN; divided by `scale` instead for a count such as params in millions), `digits` decimals,
    thousands separated."""
    convert = (lambda v: v / scale) if scale else SHOWN.get(unit_of(field), (lambda v: v, ""))[0]
    return lambda v: f"{convert(times * v):,.{digits}f}{suffix}"


def _windows(v) -> str | None:
    """[rows, columns] of slide windows as "2 x 3 = 6"; None (shown "-") for a stored value of another shape."""
    ok = isinstance(v, list) and len(v) == 2 and all(isinstance(n, int) for n in v)
    return f"{v[0]} x {v[1]} = {v[0] * v[1]}" if ok else None


# zoo.compare's columns in order (a column shows when some record has its field)
COLUMNS = (
    Column("model", "model"), Column("size", "res (px)"), Column("batch_size", "batch"),
    Column("detector", "detector"), Column("segmenter", "segmenter"), Column("tokens", "tokens"),
    Column("params", "params (M)", figure("params", 2, scale=1e6), report=True),
    Column("macs", "GMACs / image", figure("macs"), report=True),
    Column("macs", "GFLOPs / image", figure("macs", times=2), report=True),       # FLOPs = 2 x MACs
    Column("attn_share", "attn % of MACs", figure("attn_share"), report=True),
    Column("backbone_share", "backbone % of MACs", figure("backbone_share", 1)),
    Column("published_params_m", "published params (M)"),
    Column("params_vs_published", "params / published", figure("params_vs_published", 3)),
    Column("published_gflops", "published GFLOPs (mmcv MACs, H x W)"),
    Column("gmacs_vs_published", "GMACs / published", figure("gmacs_vs_published", 3)),
    Column("miou", "mIoU % (published)", figure("miou")),
    Column("miou_ms", "mIoU % ms+flip (published)", figure("miou_ms")),
    Column("act_peak_bytes", "act peak (MiB / batch)", figure("act_peak_bytes", 1), report=True),
    Column("train_macs", "train GMACs / image", figure("train_macs"), report=True),
    Column("train_act_peak_bytes", "train act peak (MiB / batch)", figure("train_act_peak_bytes", 1), report=True),
    Column("serve_bytes", "serve (MiB / batch)", figure("serve_bytes", 1)),
    Column("weight_bytes", "weights (MiB)", figure("weight_bytes", 1), report=True),
    Column("bytes_moved", "MB moved / batch", figure("bytes_moved", 0, scale=1e6)),
    Column("arithmetic_intensity", "FLOP / byte", figure("arithmetic_intensity", 1)),
    Column("features", "feature maps [C, H, W]", feature_maps),
    Column("feature_strides", "strides", lambda v: ",".join(map(str, v))),
    Column("imgs_per_s", "img/s (mean)", figure("imgs_per_s", 1)),
    Column("imgs_per_s_p50", "img/s (at p50)", figure("imgs_per_s_p50", 1)),
    Column("latency_ms_p50", "p50 (ms / batch)", figure("latency_ms_p50", 1)),
    Column("latency_ms_p99", "p99 (ms / batch)", None),
    Column("backend", "backend"), Column("dtype", "dtype"), Column("timed_on", "timed on"),
    Column("vs_eager", "img/s vs eager", figure("vs_eager", suffix="x")),
    Column("mfu", "MFU", None),
    Column("roofline_ms", "roofline (ms / batch)", None),      # compare marks one from a peak probed under load
    Column("train_imgs_per_s", "train img/s (mean)", figure("train_imgs_per_s", 1)),
    Column("train_latency_ms_p50", "train p50 (ms / batch)", figure("train_latency_ms_p50", 1)),
    Column("train_mfu", "train MFU", None),
    Column("noisy", "noisy (cv, others' CPU)", None),
    Column("box_ap", "box AP (published)", figure("box_ap", 1)),
    Column("mask_ap", "mask AP (published)", figure("mask_ap", 1)),
    Column("task_recipe", "AP published for", None),
    Column("slide_windows", "slide windows (H x W)", _windows),
    Column("slide_window_macs", "GMACs / window", figure("slide_window_macs")),
    Column("slide_macs", "slide GMACs / image", figure("slide_macs")),
    Column("seg_recipe", "mIoU published for", None),
    Column("top1", "top-1 % (at this res)", figure("top1")),
    Column("weights_label", "weights"), Column("pretraining", "pretraining"),
)


def cell(record: dict, column: Column) -> Optional[str]:
    """A column's cell of a record: its field formatted, None where the record has no value (tables show "-")."""
    value = record.get(column.field)
    return None if value is None else column.format(value)
