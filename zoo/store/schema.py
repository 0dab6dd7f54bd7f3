"""The results row, defined once: every field's name, type, unit and meaning, which fields make its key,
and the schema version. The store validates every row it writes and every line it reads against it;
`--resume`, the reports and `load_frame` identify rows with `row_key` / `measurement_key` from here.

Sizes: img_h and img_w always; img_size too for square inputs (what most tables show).
Conventions: MACs are per image everywhere (FLOPs = 2 x MACs); bytes and latencies are per batch
(what the batch needs at once, how long one step of the batch takes); img/s counts images.
"""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Optional

from analysis.count.record import CostRecord
from analysis.size import Size
from analysis.timing.result import OnnxDetails, TimingResult
from analysis.vocab import described

SCHEMA_VERSION = 2
KINDS = ("cost", "throughput")


class SchemaError(ValueError):
    """A row (or a line of a results file) that is not a valid row of this schema."""


_f = described     # one field helper for analysis' results and the row's own fields (doc, unit, key, required)


@dataclass
class Row:
    """Fields every row has, whatever became of the measurement."""
    schema: int = _f("schema version of the row", required=True)
    kind: str = _f("cost (counted on meta) or throughput (timed)", key="measurement", required=True)
    model: str = _f("registry name, or timm:<name>", key="measurement", required=True)
    img_h: int = _f("input height", "px", key="measurement", required=True)
    img_w: int = _f("input width", "px", key="measurement", required=True)
    img_size: Optional[int] = _f("input side of a square input (img_h = img_w); null for H x W inputs", "px")
    batch_size: int = _f("batch asked for (throughput: see requested_batch_size / the batch that ran)", "images",
                         key="measurement", required=True)
    settings: dict = _f("what else makes two rows comparable: dtype, train, features, and for timing device, "
                        "threads, quick, channels_last, compile, backend", key="measurement", required=True)
    env: Optional[dict] = _f("where it ran: device, or the machine's fingerprint for timed rows "
                             "(cpu_model and gpu_name are part of the key)", key="measurement",
                             key_fields=("cpu_model", "gpu_name"))
    software: dict = _f("archzoo, torch and timm versions (part of the --resume key)", key="resume", required=True)
    family: Optional[str] = _f("model family (vit, swin, convnext, ...)")
    skipped: Optional[str] = _f("why the model cannot take this input (a rule, not a failure)")
    failed: Optional[str] = _f("the error, one line: type and message")
    failed_attempts: Optional[list] = _f("Ray: every attempt's error when the task was retried")
    traceback: Optional[str] = _f("last Python frames of a failed measurement (never C++ frames)")


@dataclass
class CountedFields:
    """A cost row's fields beyond analysis' CostRecord: what the run layer adds."""
    tokens: Optional[int] = _f("sequence length incl. class/distillation tokens; None without one global sequence")
    serve_bytes: Optional[int] = _f("weight_bytes + act_peak_bytes: memory to serve the batch", "bytes per batch")
    train_serve_bytes: Optional[int] = _f("a training step as a CUDA GPU holds it (train_precision; the model --predict "
                                          "uses, analysis.predict.memory): fp32 weights, gradients and optimizer state "
                                          "(train_optimizer), the input, the larger of the backward's activation peak "
                                          "and the foreach optimizer step's temporaries", "bytes per batch")
    train_optimizer: Optional[str] = _f("optimizer whose state train_serve_bytes counts")
    train_precision: Optional[str] = _f("how train_serve_bytes's step runs: 'autocast bf16' / 'autocast fp16' "
                                        "(fp32 weights, torch.autocast's casts) or 'fp32'")
    train_gpu_parts: Optional[dict] = _f("train_serve_bytes's parts but the optimizer state, each booked by the "
                                         "caching allocator: weight_bytes, grad_bytes, input_bytes, act_peak_bytes "
                                         "(autocast's casts, the task's loss)", "bytes per batch")
    features: Optional[list] = _f("feature extractor rows: [C, H, W] of each map it returns")
    feature_strides: Optional[list] = _f("feature extractor rows: each map's stride (input side / map side)", "px")
    feature_stages: Optional[list] = _f("feature extractor rows: the stage module or block that makes each map")
    detector_macs_by_part: Optional[dict] = _f("detector rows: forward MACs of backbone, neck, rpn, box_heads, "
                                               "mask_heads", "MACs per image")
    backbone_macs: Optional[int] = _f("detector and segmenter rows: the backbone's forward MACs", "MACs per image")
    backbone_share: Optional[float] = _f("detector and segmenter rows: backbone_macs / macs", "fraction")
    backbone_params: Optional[int] = _f("detector and segmenter rows: the backbone's parameters")
    detector_rois: Optional[dict] = _f("detector rows: RoIs per image through each box head and each mask head, "
                                       "the number of stages, and mask_heads where fewer than the stages "
                                       "(detectron2's cascade: one)", "RoIs per image")
    detector_config: Optional[str] = _f("detector rows: the published config its heads follow")
    detector_uncounted: Optional[dict] = _f("detector rows: what runs without MACs: RoIAlign's bilinear cost at "
                                            "2x2 samples per bin (MACs per image), NMS")
    segmenter_macs_by_part: Optional[dict] = _f("segmenter rows: forward MACs of backbone, neck, decode_head, "
                                                "auxiliary_head (which runs in training only: not in macs)",
                                                "MACs per image")
    segmenter_params_by_part: Optional[dict] = _f("segmenter rows: parameters of backbone, neck, decode_head, "
                                                  "auxiliary_head")
    segmenter_config: Optional[str] = _f("segmenter rows: the published config its heads follow")
    miou: Optional[float] = _f("segmenter rows: published ADE20K val mIoU, single scale, of the same recipe "
                               "(seg_published names the row)", "%")
    miou_ms: Optional[float] = _f("segmenter rows: published ADE20K val mIoU, multi-scale + flip", "%")
    seg_published: Optional[dict] = _f("segmenter rows: the published row matched (source repo@commit file:line; "
                                       "recipe; params_m, gflops at flops_size and their convention; other_rows)")
    seg_recipe: Optional[str] = _f("segmenter rows: that row in one line (heads, schedule, crop, pretraining, test)")
    seg_unmatched: Optional[str] = _f("segmenter rows without miou: why no published row is this row's")
    slide_windows: Optional[list] = _f("--slide rows: [h_grids, w_grids] of mmseg's slide_inference at this size")
    slide_window_macs: Optional[int] = _f("--slide rows: inference MACs of one window (crop, or less at an edge)",
                                          "MACs per window")
    slide_macs: Optional[int] = _f("--slide rows: inference MACs of all windows of one image", "MACs per image")
    box_ap: Optional[float] = _f("detector rows: COCO val2017 box AP published for this recipe (task_published)", "%")
    mask_ap: Optional[float] = _f("detector rows: COCO val2017 mask AP published for this recipe (task_published)", "%")
    task_published: Optional[dict] = _f("detector rows: the published row box_ap and mask_ap come from: detector, "
                                        "schedule, epochs, pretraining, params/GFLOPs at flops_size, eval_size, "
                                        "config, source (repo@commit file:line), other_rows of the same heads")
    task_recipe: Optional[str] = _f("detector rows: that published row in one line (name, heads, schedule, "
                                    "pretraining: source)")
    task_unmatched: Optional[str] = _f("detector rows without box_ap: why no published row is this recipe's")


@dataclass
class TimedFields:
    """A timed row's fields beyond analysis' TimingResult (and its backend's): what the run layer adds."""
    noisy: Optional[bool] = _f("cv or foreign_cpu_share above the documented thresholds (zoo.runs.timed)")
    attn_path: Optional[str] = _f("how attention ran on this device (read during the first warm-up step)")
    macs: Optional[int] = _f("forward MACs used for MFU", "MACs per image")
    flops_per_img: Optional[float] = _f("FLOPs of one step: 2 x macs, x3 for a training step", "FLOPs per image")
    peak_flops: Optional[float] = _f("measured dense GEMM peak of this machine, dtype and threads", "FLOP/s")
    peak_kernel: Optional[str] = _f("the GEMM probe that gave peak_flops (mm_<n>)")
    peak_method: Optional[str] = _f("how peak_flops was found: GEMM sizes probed, any left out by the time cap, "
                                    "seconds; and when the dtype has no fast GEMM on the device")
    peak_fast_gemm: Optional[bool] = _f("false: this dtype's GEMM runs at under half fp32's rate on the device, so mfu is "
                                        "not given")
    peak_probe: Optional[str] = _f("where peak_flops came from: kept from a quiet probe, probed now, or probed "
                                   "under load (others' CPU) and not kept")
    mfu: Optional[float] = _f("flops_per_img x imgs_per_s / peak_flops (never clipped)", "fraction")
    mfu_above_peak: Optional[bool] = _f("mfu > 1: a kernel faster than the GEMM probe, or fewer multiplies "
                                        "than nominal (Winograd)")
    datasheet_peak_flops: Optional[float] = _f("the device's datasheet dense peak (known GPUs)", "FLOP/s")
    mfu_datasheet: Optional[float] = _f("MFU against datasheet_peak_flops", "fraction")
    sweep_within_target: Optional[bool] = _f("batch sweep: this point's latency is within --latency-target-ms")
    serving_batch: Optional[bool] = _f("batch sweep: the largest batch within the latency target")
    latency_target_ms: Optional[float] = _f("batch sweep: the target", "ms per batch")
    mem_bandwidth: Optional[float] = _f("measured memory bandwidth of this machine: STREAM-like triad, best of 5 "
                                        "(analysis.timing.bandwidth)", "bytes/s")
    roofline_ms: Optional[float] = _f("roofline estimate: sum over ops of max(FLOPs / peak_flops, bytes / "
                                      "mem_bandwidth), + 5 us per kernel on GPUs (analysis.predict.roofline)", "ms per batch")
    roofline_compute_share: Optional[float] = _f("share of roofline_ms in compute-bound ops", "fraction")
    roofline_memory_share: Optional[float] = _f("share of roofline_ms in memory-bound ops", "fraction")
    roofline_launch_share: Optional[float] = _f("share of roofline_ms that is kernel launches", "fraction")


# Each kind of row is these dataclasses' fields, in order; a name met twice keeps its first definition.
SOURCES: dict[str, tuple[type, ...]] = {"cost": (Row, CostRecord, CountedFields),
                                        "throughput": (Row, TimingResult, OnnxDetails, TimedFields)}


@typing.no_type_check
def _fields(kind: str) -> dict[str, tuple[dataclasses.Field, tuple[type, ...]]]:
    """field -> (its dataclass field, the Python types it accepts: None included where Optional)."""
    found = {}
    for source in SOURCES[kind]:
        hints = typing.get_type_hints(source)
        for f in dataclasses.fields(source):
            if f.name in found or f.metadata.get("flattened"):
                continue
            hint = hints[f.name]
            args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
            found[f.name] = (f, tuple(object if a is Any else type(None) if a is type(None) else a for a in args))
    return found


_FIELDS = {kind: _fields(kind) for kind in KINDS}
_ROW_FIELDS = {f.name for f in dataclasses.fields(Row)}


def fields_of(kind: str) -> dict[str, dataclasses.Field]:
    return {name: f for name, (f, _) in _FIELDS[kind].items()}


def accepted_types(kind: str) -> dict[str, tuple[type, ...]]:
    """field -> the Python types a row of `kind` may hold there (type(None) where optional)."""
    return {name: types for name, (_, types) in _FIELDS[kind].items()}


def _type_ok(value, accepted: tuple[type, ...]) -> bool:
    if object in accepted:
        return True
    if isinstance(value, bool):
        return bool in accepted
    if isinstance(value, int) and float in accepted:   # JSON writes 2.0 as 2.0, but 2 is a fine float
        return True
    return isinstance(value, accepted)


# Bounds of every numeric field (and of the numbers inside list and dict fields): (low, high), inclusive.
# Sizes and batches as zoo.compare accepts them; counts, bytes, rates and times non-negative, within int64.
MAX_COUNT = 2**63 - 1
BOUNDS = {"img_h": (1, 65_536), "img_w": (1, 65_536), "img_size": (1, 65_536), "batch_size": (1, 1 << 20),
          "requested_batch_size": (1, 1 << 20), "ran_batch_size": (1, 1 << 20), "oom_batch_sizes": (1, 1 << 20),
          "schema": (SCHEMA_VERSION, SCHEMA_VERSION), "attn_share": (0, 1), "threads": (1, 1 << 20)}
DEFAULT_BOUNDS = (0, MAX_COUNT)
# settings every row carries (readers group by them): name -> accepted types
SETTINGS = {"dtype": (str,), "train": (bool,), "features": (bool,)}
TIMED_SETTINGS = {"device": (str,), "threads": (int, type(None)), "quick": (bool,), "channels_last": (bool,),
                  "compile": (str, bool, type(None)), "backend": (str,)}


# what list fields hold, and the per-component dicts' values (readers sum and join them)
ITEMS = {"uncounted_ops": str, "onnx_providers": str, "failed_attempts": str, "oom_batch_sizes": int,
         "latencies_ms": (int, float), "features": list, "arithmetic_intensity_by_component": (int, float)}


def _check_items(name: str, value) -> None:
    items = value.values() if name.endswith("_by_component") and isinstance(value, dict) else value
    accepted = ITEMS.get(name, (int,) if name.endswith("_by_component") else None)
    if accepted is None or not isinstance(value, (list, dict)):
        return
    for item in items:
        if not isinstance(item, accepted) or isinstance(item, bool):
            names = " or ".join(t.__name__ for t in (accepted if isinstance(accepted, tuple) else (accepted,)))
            raise SchemaError(f"{name} holds {type(item).__name__} {item!r:.40}, not {names}")
        if name == "features" and (len(item) != 3 or not all(type(v) is int for v in item)):
            raise SchemaError(f"features holds {item!r:.40}, not [C, H, W]")


def _check_bounds(name: str, value) -> None:
    if isinstance(value, list):
        for item in value:
            _check_bounds(name, item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = BOUNDS.get(name, DEFAULT_BOUNDS)
        if not low <= value <= high:    # NaN fails this too
            raise SchemaError(f"{name} {value!r:.40} is out of its bounds [{low:g}, {high:g}]")


def _check_settings(kind: str, settings: dict) -> None:
    for name, accepted in {**SETTINGS, **(TIMED_SETTINGS if kind == "throughput" else {})}.items():
        value = settings.get(name)
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise SchemaError(f"settings.{name} is {type(value).__name__} {value!r:.40}, not {accepted[0].__name__}")
    for name, value in settings.items():
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise SchemaError(f"settings.{name} is {type(value).__name__}, not a plain value")


def beyond_int64(row: dict) -> list[tuple[str, float]]:
    """(field, value) of every count in `row` past MAX_COUNT: a size and batch within the input bounds can
    count more than int64 holds (vit_b16 at 65,536 px and batch 2^20 moves 2.5e19 bytes); such a row is
    refused as a whole (zoo.runs.tasks), never stored with a rounded or wrapped number."""
    found = []
    for name, value in row.items():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, (int, float)) and not isinstance(item, bool) and item > MAX_COUNT \
                    and BOUNDS.get(name, DEFAULT_BOUNDS)[1] == MAX_COUNT:
                found.append((name, item))
    return found


def validate(row: Any) -> dict:
    """Return `row` if it is a valid row of this schema (its kind's dataclass takes it), else raise SchemaError
    saying why (one line)."""
    if not isinstance(row, dict):
        raise SchemaError(f"a row is a JSON object, not {type(row).__name__}")
    _check_head(row)
    if not all(isinstance(name, str) for name in row):
        raise SchemaError("a row's field names are text")
    ROW_CLASSES[row["kind"]](**row)
    return row


def _check_head(row: dict, kind: str | None = None) -> None:
    if row.get("schema") != SCHEMA_VERSION:
        raise SchemaError(f"schema {row.get('schema')!r} is not this archzoo's ({SCHEMA_VERSION}); "
                          f"re-measure it with this version")
    if row.get("kind") not in (KINDS if kind is None else (kind,)):
        raise SchemaError(f"unknown kind {row.get('kind')!r}; expected one of {', '.join(KINDS if kind is None else (kind,))}")


def _check(kind: str, row: dict) -> None:
    """The checks a row of `kind` passes, beyond having only its dataclass's fields."""
    measured = row.get("skipped") is None and row.get("failed") is None
    for name, (f, types_ok) in _FIELDS[kind].items():
        value = row.get(name)
        if value is None:
            if f.metadata["required"] and (measured or name in _ROW_FIELDS):
                raise SchemaError(f"{kind} row lacks {name}")
            continue
        if not _type_ok(value, types_ok):
            raise SchemaError(f"{name} is {type(value).__name__} {value!r:.40}, not {types_ok[0].__name__}")
    for name, value in row.items():
        _check_items(name, value)
        _check_bounds(name, list(value.values()) if isinstance(value, dict) else value)
    _check_settings(kind, row["settings"])
    square = row["img_h"] == row["img_w"]
    if row.get("img_size") != (row["img_h"] if square else None):
        raise SchemaError(f"img_size {row.get('img_size')!r} does not match img_h x img_w "
                          f"{row['img_h']}x{row['img_w']}")


class TypedRow:
    """A row as its kind's dataclass (CostRow, ThroughputRow: the fields of SOURCES). Made from its fields by
    name; constructing one checks it (SchemaError, one line: an unknown or misspelt field, a missing or
    mistyped one). It keeps which fields it was given: to_json() gives exactly those (a field left out stays
    out, one given as None stays null), so a row read from results/ serialises to the same JSON."""
    KIND = ""

    def __init__(self, **given):
        _check_head(given, self.KIND)
        unknown = sorted(set(given) - set(_FIELDS[self.KIND]))
        if unknown:
            raise SchemaError(f"unknown field(s) for a {self.KIND} row: {', '.join(unknown[:5])}")
        _check(self.KIND, given)
        for f in dataclasses.fields(self):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            setattr(self, f.name, given.get(f.name, default))
        self._given = tuple(given)

    def to_json(self) -> dict:
        """The row as JSON holds it: the fields it was made with, in that order."""
        return {name: getattr(self, name) for name in self._given}


def _row_class(kind: str) -> type:
    hints = {}
    for source in reversed(SOURCES[kind]):       # the first definition of a name wins, as in _fields
        hints.update(typing.get_type_hints(source))
    fields = [(name, hints[name], dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                     metadata=f.metadata)) for name, (f, _) in _FIELDS[kind].items()]
    return dataclasses.make_dataclass(f"{kind.title()}Row", fields, bases=(TypedRow,), init=False,
                                      namespace={"KIND": kind, "__module__": __name__})


CostRow = _row_class("cost")
ThroughputRow = _row_class("throughput")
ROW_CLASSES: dict[str, type[TypedRow]] = {"cost": CostRow, "throughput": ThroughputRow}


def make_row(**fields) -> TypedRow:
    """The row of the kind `fields` names, checked (SchemaError); .to_json() is what the store writes."""
    _check_head(fields)
    return ROW_CLASSES[fields["kind"]](**fields)


def row_size(row: dict) -> Size:
    """The row's input size (its label: row_size(row).label)."""
    return Size(row["img_h"], row["img_w"])


def sort_key(row: dict) -> tuple:
    """Model names in natural order (vit_b8 < vit_b16), then size, then batch."""
    name = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", row["model"])]
    return (name, row["img_h"] * row["img_w"], row["img_h"], row["batch_size"])


def is_measured(row: dict) -> bool:
    return row.get("skipped") is None and row.get("failed") is None


def _key(row: dict, level: tuple[str, ...]) -> tuple:
    parts = []
    for name, (f, _) in _FIELDS[row["kind"]].items():
        if f.metadata["key"] not in level:
            continue
        if f.metadata["key_fields"]:   # only timed rows: one machine's numbers never replace another's
            value = row.get(name) or {}
            parts.append(tuple(value.get(k) for k in f.metadata["key_fields"]) if row["kind"] == "throughput" else ())
        else:
            value = row[name]
            parts.append(tuple(sorted((k, repr(v)) for k, v in value.items())) if isinstance(value, dict) else value)
    return tuple(parts)


def measurement_key(row: dict) -> tuple:
    """What was measured, and where: a later row with this key replaces an earlier one in reports. The
    fields marked key="measurement" above; software versions are not part of it (see row_key)."""
    return _key(row, ("measurement",))


def row_key(row: dict) -> tuple:
    """measurement_key plus the fields marked key="resume" (software versions): --resume re-measures what
    newer software would count or time differently."""
    return _key(row, ("measurement", "resume"))


def schema_table() -> str:
    """The README's field table (markdown), generated from the dataclasses above."""
    lines = ["| field | rows | type | unit | key | meaning |", "|---|---|---|---|---|---|"]
    seen: dict[str, list[str]] = {}
    for kind in KINDS:
        for name in fields_of(kind):
            seen.setdefault(name, []).append(kind)
    for name, kinds in seen.items():
        kind = kinds[0]
        f, accepted = _FIELDS[kind][name]
        meta = f.metadata
        type_name = "/".join(t.__name__ for t in accepted if t is not type(None)).replace("object", "any")
        rows = "all" if len(kinds) == len(KINDS) else ", ".join(kinds)
        key = {"measurement": "yes", "resume": "resume"}.get(meta.get("key"), "")
        lines.append(f"| `{name}` | {rows} | {type_name} | {meta['unit']} | {key} | {meta['doc']} |")
    return "\n".join(lines) + "\n"
