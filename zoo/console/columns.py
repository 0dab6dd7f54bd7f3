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
    format: Optional[Callable[[object], Optional[str]]]    # None: the cell reads more of the record (RECORD_CELLS)
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


def text(value) -> str:
    return str(value)


def _windows(v) -> str | None:
    """[rows, columns] of slide windows as "2 x 3 = 6"; None (shown "-") for a stored value of another shape."""
    ok = isinstance(v, list) and len(v) == 2 and all(isinstance(n, int) for n in v)
    return f"{v[0]} x {v[1]} = {v[0] * v[1]}" if ok else None


def _col(field: str, header: str, fmt=text, report: bool = False) -> Column:
    return Column(field, header, fmt, report)


# zoo.compare's columns in order (a column shows when some record has its field)
COLUMNS = (
    _col("model", "model"), _col("size", "res (px)"), _col("batch_size", "batch"), _col("detector", "detector"),
    _col("segmenter", "segmenter"), _col("tokens", "tokens"),
    _col("params", "params (M)", figure("params", 2, scale=1e6), report=True),
    _col("macs", "GMACs / image", figure("macs"), report=True),
    _col("macs", "GFLOPs / image", figure("macs", times=2), report=True),       # FLOPs = 2 x MACs
    _col("attn_share", "attn % of MACs", figure("attn_share"), report=True),
    _col("backbone_share", "backbone % of MACs", figure("backbone_share", 1)),
    _col("published_params_m", "published params (M)"),
    _col("params_vs_published", "params / published", figure("params_vs_published", 3)),
    _col("published_gflops", "published GFLOPs (mmcv MACs, H x W)"),
    _col("gmacs_vs_published", "GMACs / published", figure("gmacs_vs_published", 3)),
    _col("miou", "mIoU % (published)", figure("miou")), _col("miou_ms", "mIoU % ms+flip (published)", figure("miou_ms")),
    _col("act_peak_bytes", "act peak (MiB / batch)", figure("act_peak_bytes", 1), report=True),
    _col("train_macs", "train GMACs / image", figure("train_macs"), report=True),
    _col("train_act_peak_bytes", "train act peak (MiB / batch)", figure("train_act_peak_bytes", 1), report=True),
    _col("serve_bytes", "serve (MiB / batch)", figure("serve_bytes", 1)),
    _col("weight_bytes", "weights (MiB)", figure("weight_bytes", 1), report=True),
    _col("bytes_moved", "MB moved / batch", figure("bytes_moved", 0, scale=1e6)),
    _col("arithmetic_intensity", "FLOP / byte", figure("arithmetic_intensity", 1)),
    _col("features", "feature maps [C, H, W]", feature_maps),
    _col("feature_strides", "strides", lambda v: ",".join(map(str, v))),
    _col("imgs_per_s", "img/s (mean)", figure("imgs_per_s", 1)),
    _col("imgs_per_s_p50", "img/s (at p50)", figure("imgs_per_s_p50", 1)),
    _col("latency_ms_p50", "p50 (ms / batch)", figure("latency_ms_p50", 1)),
    _col("latency_ms_p99", "p99 (ms / batch)", None),
    _col("backend", "backend"), _col("dtype", "dtype"), _col("timed_on", "timed on"),
    _col("vs_eager", "img/s vs eager", figure("vs_eager", suffix="x")),
    _col("mfu", "MFU", None),
    _col("roofline_ms", "roofline (ms / batch)", figure("roofline_ms", 1)),
    _col("train_imgs_per_s", "train img/s (mean)", figure("train_imgs_per_s", 1)),
    _col("train_latency_ms_p50", "train p50 (ms / batch)", figure("train_latency_ms_p50", 1)),
    _col("train_mfu", "train MFU", None),
    _col("noisy", "noisy (cv, others' CPU)", None),
    _col("box_ap", "box AP (published)", figure("box_ap", 1)),
    _col("mask_ap", "mask AP (published)", figure("mask_ap", 1)),
    _col("task_recipe", "AP published for", None),
    _col("slide_windows", "slide windows (H x W)", _windows),
    _col("slide_window_macs", "GMACs / window", figure("slide_window_macs")),
    _col("slide_macs", "slide GMACs / image", figure("slide_macs")),
    _col("seg_recipe", "mIoU published for", None),
    _col("top1", "top-1 % (at this res)", figure("top1")),
    _col("weights_label", "weights"), _col("pretraining", "pretraining"),
)


def cell(record: dict, column: Column) -> Optional[str]:
    """A column's cell of a record: its field formatted, None where the record has no value (tables show "-")."""
    value = record.get(column.field)
    return None if value is None else column.format(value)
