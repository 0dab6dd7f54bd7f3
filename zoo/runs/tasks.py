"""One unit of measurement (model x resolution x batch x setting) and the function that runs it.

Tasks are plain, picklable data, so any executor (in-process, a subprocess, a Ray worker) can run
them; `run_task` turns the model's name into a module (zoo.models), measures it (analysis) and
returns one row of the schema (zoo.store.schema), failures included. Every path that measures goes
through here: the CLI, Ray, the benchmarks and the report's deterministic refresh.

A Task composes, never restates: its kind, the Request it builds and counts (zoo.runs.request), and for a timed
task the Timing that says how. The row's settings come from the fields' metadata (`setting`), as the row
schema's keys do: "always" fields are in every row's settings, "when set" ones only when not None.
"""
from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from typing import Callable, Optional

from analysis.size import Size
from analysis.timing.protocol import DEFAULT_PROTOCOL, QUICK_PROTOCOL

from .._version import __version__
from ..models.registry import get_spec
from .counted import count, counted  # noqa: F401 - count: imported from here by callers and tests
from .request import FIELDS as REQUEST_FIELDS
from .request import Request, setting, setting_fields
from ..store.schema import MAX_COUNT, SCHEMA_VERSION, SchemaError, TypedRow, beyond_int64, make_row, row_key

OnRow = Callable[[dict], None]   # what executors hand each finished row to


@dataclass(frozen=True)
class Timing:
    """How a throughput task is timed (never part of what is built or counted)."""
    device: str = setting("cpu")             # "cpu", "cuda", "cuda:1" or "auto"
    threads: Optional[int] = setting(None)   # torch's intra-op threads (None: the harness's choice)
    quick: bool = setting(False)             # short runs (QUICK_PROTOCOL)
    channels_last: bool = setting(False)     # channels-last memory format
    compile: Optional[str] = setting(None)   # a torch.compile mode ("default", "max-autotune", ...)
    backend: str = setting("eager")          # eager PyTorch or onnxruntime
    iters: Optional[int] = setting(None, "when set")          # at least this many timed steps (else the protocol's)
    min_seconds: Optional[float] = setting(None, "when set")  # at least this timed span (else the protocol's)

    def replace(self, **changes) -> Timing:
        return dataclasses.replace(self, **changes)

    @property
    def protocol(self):
        """The timing protocol: --quick's or the default, with --iters and --min-seconds applied."""
        protocol = QUICK_PROTOCOL if self.quick else DEFAULT_PROTOCOL
        asked = {k: v for k, v in (("min_iters", self.iters), ("min_seconds", self.min_seconds)) if v is not None}
        return dataclasses.replace(protocol, **asked)


KINDS = ("cost", "throughput")
TIMING_FIELDS = tuple(f.name for f in dataclasses.fields(Timing))


@dataclass(frozen=True)
class Task:
    kind: str                           # "cost": params, MACs, attention, activation memory (meta); "throughput": timed
    request: Request                    # what is built and counted (and timed)
    timing: Optional[Timing] = None     # throughput: how it is timed (Timing() when not given); cost: None
    padded_from: Optional[str] = setting(None, "when set")   # the size asked for, when --pad-to padded it up
    slide: Optional[tuple] = setting(None, "when set")       # cost of a segmenter: also mmseg's slide test, (crop, stride) px

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"a task's kind is one of {', '.join(KINDS)}, not {self.kind!r}")
        if not isinstance(self.request, Request):
            raise TypeError(f"a Task holds a Request, not {type(self.request).__name__} (Task.named builds one)")
        if self.kind == "throughput" and self.timing is None:
            object.__setattr__(self, "timing", Timing())
        if self.kind == "cost" and self.timing is not None:
            raise ValueError("a cost task is counted on meta, never timed: it takes no Timing")
        if self.slide is not None:        # a list from JSON: a tuple, so the task stays hashable
            object.__setattr__(self, "slide", tuple(self.slide))

    @classmethod
    def of(cls, kind: str, request: Request, timing: Timing | None = None, **task_fields) -> Task:
        """The `kind` task measuring `request`, timed as `timing` (throughput); task_fields: padded_from, slide."""
        return cls(kind, request, timing, **task_fields)

    @classmethod
    def named(cls, kind: str, *request_args, **fields) -> Task:
        """A task from a Request's arguments and any fields of Request, Timing or Task by name, each given to the
        one that holds it: Task.named("throughput", "deit_ti", 224, batch_size=8, device="cpu", quick=True)."""
        unknown = set(fields) - set(REQUEST_FIELDS) - set(TIMING_FIELDS) - {"padded_from", "slide"}
        if unknown:
            raise TypeError(f"Task.named: no field {', '.join(sorted(unknown))}")
        timing = {k: v for k, v in fields.items() if k in TIMING_FIELDS}
        request = Request(*request_args, **{k: v for k, v in fields.items() if k in REQUEST_FIELDS})
        own = {k: v for k, v in fields.items() if k in ("padded_from", "slide")}
        return cls(kind, request, Timing(**timing) if timing or kind == "throughput" else None, **own)

    def replace(self, **changes) -> Task:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)        # request.img_size: {"height": ..., "width": ...}

    @classmethod
    def from_json(cls, fields: dict) -> Task:
        request = fields["request"]
        timing = fields.get("timing")
        return cls(fields["kind"], Request(**{**request, "img_size": Size(**request["img_size"])}),
                   None if timing is None else Timing(**timing), fields.get("padded_from"), fields.get("slide"))

    @property
    def settings(self) -> dict:
        """What, besides model, resolution and batch, makes two rows comparable: the fields marked `setting` in
        the Request, the Timing (timed rows only) and the Task, "always" ones always, "when set" ones when not
        None (so rows written before such a field existed keep their keys)."""
        settings = setting_fields(self.request)
        for holder in (self.timing, self):
            settings.update(setting_fields(holder) if holder is not None else {})
        if "slide" in settings:           # settings hold plain values: "CROP,STRIDE"
            settings["slide"] = ",".join(map(str, settings["slide"]))
        return settings


def software() -> dict:
    from analysis.timing.fingerprint import timm_version, torch_version

    return {"archzoo": __version__, "torch": torch_version().split("+")[0], "timm": timm_version()}


def base_row(task: Task) -> dict:
    """The fields every row of `task` has, whatever became of the measurement."""
    request = task.request
    size = request.img_size
    return {"schema": SCHEMA_VERSION, "kind": task.kind, "model": request.model, "img_h": size.height,
            "img_w": size.width, "img_size": size.side, "batch_size": request.batch_size, "settings": task.settings,
            "software": software()}


def machine(device: str) -> dict:
    """The fingerprint fields that tell one machine's timed rows from another's (part of their key)."""
    import torch

    from analysis.timing.fingerprint import cpu_model_name, gpu_name

    # NB: gpu_name is None on a driver without a GPU (a Ray sweep onto GPU workers), not an error
    return {"cpu_model": cpu_model_name(), "gpu_name": gpu_name(torch.device("cpu" if device == "cpu" else "cuda"))}


def task_key(task: Task) -> tuple:
    """The row_key that running `task` here would give, to skip it on --resume."""
    env = machine(task.timing.device) if task.kind == "throughput" else {}
    return row_key({**base_row(task), "env": env})


def one_line(error: BaseException) -> str:
    """'Type: first line of the message', short: C++ stack frames and long dumps stay out of rows."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= 300 else text[:297] + "..."


def task_row(task: Task, **fields) -> TypedRow:
    """The typed row (zoo.store.schema) of `task` holding `fields`: its identity comes from the task, never from
    what was measured or kept. SchemaError when the fields are not a valid row."""
    identity = base_row(task)
    return make_row(**{**identity, **fields, **identity})


def failed_row(task: Task, error: str, family: str | None = None, detail: str | None = None) -> dict:
    """The one failed-row format, whatever failed (the measurement, a subprocess, a Ray worker)."""
    return task_row(task, family=family, failed=error, **({"traceback": detail} if detail else {})).to_json()


def skipped_row(task: Task) -> dict:
    """The row of a task whose size the model's rule refuses (a rule, not a failure)."""
    request = task.request
    spec = get_spec(request.model)
    return task_row(task, family=spec.family, skipped=f"{request.model} {spec.rule.refusal(request.img_size)}").to_json()


def run_task(task: Task, macs: int | None = None, peak: dict | None = None) -> dict:
    """Measure one (planned) task. Never raises for a failed measurement: the row carries the error.

    macs: per-image MACs of the model at this size (timed rows' MFU; counted here when None).
    peak: a GEMM peak for this device, dtype and threads (zoo.runs.peaks); probed when None.
    """
    spec = get_spec(task.request.model)
    try:
        if task.kind == "cost":
            measured = _cost(task)
        else:
            from .timed import measure_timed     # torch: a cost row the user cache holds needs none

            measured = measure_timed(task, macs, peak)
    except Exception as e:  # recorded, never swallowed: the row says what went wrong
        if NUMEL_OVERFLOW in str(e):       # the documented skipped row, as for a count past int64 below
            return task_row(task, family=spec.family, skipped=past_int64_tensor(task)).to_json()
        return failed_row(task, one_line(e), spec.family, "".join(traceback.format_tb(e.__traceback__, limit=-5)))
    fields = {**measured, "family": spec.family}     # as the identity: from the task, never from what was measured
    try:
        return task_row(task, **fields).to_json()
    except SchemaError as e:     # never raised in a pool worker: every task of a run gets its row
        over = beyond_int64(measured)
        if over:
            name, value = over[0]
            return task_row(task, family=spec.family,
                            skipped=f"{name} {value:.3g} is past the row schema's int64 bound ({MAX_COUNT:.3g}): "
                                    f"take a smaller size or batch").to_json()
        return failed_row(task, one_line(e), spec.family)


NUMEL_OVERFLOW = "numel: integer multiplication overflow"    # c10's refusal to make a tensor past int64 elements


def past_int64_tensor(task: Task) -> str:
    """A task whose forward makes a tensor of more than 2^63 - 1 elements (ViTDet's global attention bias,
    (B x heads, hw, hw), at 65,536 px and batch 2^20): torch cannot make it even on the meta device, and its
    bytes, so the activation peak, are past the row schema's int64 bound too."""
    return (f"a tensor of its forward at {task.request.img_size.label} px, batch {task.request.batch_size} has more elements than int64 "
            f"holds (torch: {NUMEL_OVERFLOW}), so its activation bytes are past the row schema's int64 bound "
            f"({MAX_COUNT:.3g}): take a smaller size or batch")


def _cost(task: Task) -> dict:
    request = task.request
    record = counted(request)       # with the training memory of the request's optimizer
    if request.detector is not None:     # the published task figures: data, looked up fresh (never cached)
        from ..models.detectors.published import task_fields

        record = {**record, **task_fields(request.model, request.detector)}
    if request.segmenter is not None:
        from ..models.segmenters.published import task_fields as segmenter_task_fields

        record = {**record, **segmenter_task_fields(request.model, request.segmenter, request.img_size.hw)}
    if task.slide is not None:
        record = {**record, **_slide_fields(task)}
    return record


def _slide_fields(task: Task) -> dict:
    """mmseg's slide test of the segmenter at this size (zoo.models.segmenters.slide): its windows, and the
    inference MACs of one window (counted at the window's size) and of all of them."""
    from ..models.segmenters.slide import grid

    crop, stride = task.slide
    height, width = task.request.img_size.hw
    window = Size(min(crop, height), min(crop, width))
    grids = [grid(height, crop, stride), grid(width, crop, stride)]
    window_macs = counted(task.request.per_image.replace(img_size=window))["macs"]
    return {"slide_windows": grids, "slide_window_macs": window_macs, "slide_macs": grids[0] * grids[1] * window_macs}
