"""One unit of measurement (model x resolution x batch x setting) and the function that runs it.

Tasks are plain, picklable data, so any executor (in-process, a subprocess, a Ray worker) can run
them; `run_task` turns the model's name into a module (zoo.models), measures it (analysis) and
returns one row of the schema (zoo.runs.schema), failures included. Every path that measures goes
through here: the CLI, Ray, the benchmarks and the report's deterministic refresh.
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
from .request import Request
from .schema import MAX_COUNT, SCHEMA_VERSION, SchemaError, TypedRow, beyond_int64, make_row, row_key

OnRow = Callable[[dict], None]   # what executors hand each finished row to


@dataclass(frozen=True)
class Task:
    kind: str                 # "cost": params, MACs, attention, activation memory (meta); "throughput": timed
    model: str
    img_size: Size            # checked against the model's rule when planning
    batch_size: int = 1
    dtype: str = "fp32"
    train: bool = False       # cost: also count the training step; throughput: time a training step
    features: bool = False    # the backbone as a feature extractor (no pooling, no head)
    device: str = "cpu"       # throughput only; cost always counts on "meta"
    threads: Optional[int] = None
    quick: bool = False       # throughput: short runs (QUICK_PROTOCOL)
    channels_last: bool = False       # throughput: channels-last memory format
    compile: Optional[str] = None     # throughput: a torch.compile mode ("default", "max-autotune", ...)
    backend: str = "eager"            # throughput: eager PyTorch or onnxruntime
    frozen_stages: Optional[int] = None   # no gradients for the stem and stages 1..K (features / detector)
    detector: Optional[str] = None        # count the whole detector (zoo.models.detectors) on this backbone
    segmenter: Optional[str] = None       # count the whole segmenter (zoo.models.segmenters) on this backbone
    optimizer: Optional[str] = None       # cost with train: whose state the training memory counts (None: SGD)
    iters: Optional[int] = None       # throughput: at least this many timed steps (else the protocol's)
    padded_from: Optional[str] = None     # the size asked for, when --pad-to padded it up to img_size
    min_seconds: Optional[float] = None   # throughput: at least this timed span (else the protocol's)
    slide: Optional[tuple] = None         # cost of a segmenter: also mmseg's slide test, (crop, stride) px

    def __post_init__(self):  # a Task is public API: 224 and (800, 1344) are taken as the Size they mean
        object.__setattr__(self, "img_size", Size.of(self.img_size))
        if self.slide is not None:        # a list from JSON: a tuple, so the task stays hashable
            object.__setattr__(self, "slide", tuple(self.slide))

    @classmethod
    def of(cls, kind: str, request: Request, **how) -> Task:
        """The `kind` task measuring `request`; how: the other fields (device, backend, quick, ...)."""
        return cls(kind, **{name: getattr(request, name) for name in REQUEST_FIELDS}, **how)

    @property
    def request(self) -> Request:
        """What this task builds and counts (zoo.runs.request): its count, MACs and roofline read it."""
        return Request(**{name: getattr(self, name) for name in REQUEST_FIELDS})

    def to_json(self) -> dict:
        return dataclasses.asdict(self)            # img_size: {"height": ..., "width": ...}

    @classmethod
    def from_json(cls, fields: dict) -> Task:
        return cls(**{**fields, "img_size": Size(**fields["img_size"])})

    @property
    def settings(self) -> dict:
        """What, besides model, resolution and batch, makes two rows comparable."""
        fields = dataclasses.asdict(self)
        for name in ("kind", "model", "img_size", "batch_size"):
            fields.pop(name)
        for name in ("frozen_stages", "detector", "segmenter", "optimizer"):   # absent when unset: earlier rows keep their keys
            if fields[name] is None:
                fields.pop(name)
        if self.kind == "cost":
            for name in ("device", "threads", "quick", "channels_last", "compile", "backend"):
                fields.pop(name)
        for name in ("iters", "min_seconds", "padded_from", "slide"):   # only when asked: earlier rows keep their key
            if fields[name] is None:
                fields.pop(name)
            elif name == "slide":         # settings hold plain values: "CROP,STRIDE"
                fields[name] = ",".join(map(str, fields[name]))
        return fields

    @property
    def protocol(self):
        """The timing protocol: --quick's or the default, with --iters and --min-seconds applied."""
        protocol = QUICK_PROTOCOL if self.quick else DEFAULT_PROTOCOL
        asked = {k: v for k, v in (("min_iters", self.iters), ("min_seconds", self.min_seconds)) if v is not None}
        return dataclasses.replace(protocol, **asked)


def software() -> dict:
    from analysis.timing.fingerprint import timm_version, torch_version

    return {"archzoo": __version__, "torch": torch_version().split("+")[0], "timm": timm_version()}


def base_row(task: Task) -> dict:
    """The fields every row of `task` has, whatever became of the measurement."""
    size = task.img_size
    return {"schema": SCHEMA_VERSION, "kind": task.kind, "model": task.model, "img_h": size.height,
            "img_w": size.width, "img_size": size.side, "batch_size": task.batch_size, "settings": task.settings,
            "software": software()}


def machine(device: str) -> dict:
    """The fingerprint fields that tell one machine's timed rows from another's (part of their key)."""
    import torch

    from analysis.timing.fingerprint import cpu_model_name, gpu_name

    # NB: gpu_name is None on a driver without a GPU (a Ray sweep onto GPU workers), not an error
    return {"cpu_model": cpu_model_name(), "gpu_name": gpu_name(torch.device("cpu" if device == "cpu" else "cuda"))}


def task_key(task: Task) -> tuple:
    """The row_key that running `task` here would give, to skip it on --resume."""
    env = machine(task.device) if task.kind == "throughput" else {}
    return row_key({**base_row(task), "env": env})


def one_line(error: BaseException) -> str:
    """'Type: first line of the message', short: C++ stack frames and long dumps stay out of rows."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= 300 else text[:297] + "..."


def task_row(task: Task, **fields) -> TypedRow:
    """The typed row (zoo.runs.schema) of `task` holding `fields`: its identity comes from the task, never from
    what was measured or kept. SchemaError when the fields are not a valid row."""
    identity = base_row(task)
    return make_row(**{**identity, **fields, **identity})


def failed_row(task: Task, error: str, family: str | None = None, detail: str | None = None) -> dict:
    """The one failed-row format, whatever failed (the measurement, a subprocess, a Ray worker)."""
    return task_row(task, family=family, failed=error, **({"traceback": detail} if detail else {})).to_json()


def skipped_row(task: Task) -> dict:
    """The row of a task whose size the model's rule refuses (a rule, not a failure)."""
    spec = get_spec(task.model)
    return task_row(task, family=spec.family, skipped=f"{task.model} {spec.rule.refusal(task.img_size)}").to_json()


def run_task(task: Task, macs: int | None = None, peak: dict | None = None) -> dict:
    """Measure one (planned) task. Never raises for a failed measurement: the row carries the error.

    macs: per-image MACs of the model at this size (timed rows' MFU; counted here when None).
    peak: a GEMM peak for this device, dtype and threads (zoo.runs.peaks); probed when None.
    """
    spec = get_spec(task.model)
    try:
        if task.kind == "cost":
            measured = _cost(task)
        else:
            from .timed import measure_timed     # torch: a cost row the user cache holds needs none

            measured = measure_timed(task, macs, peak)
    except Exception as e:  # recorded, never swallowed: the row says what went wrong
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


def _cost(task: Task) -> dict:
    record = counted(task.request)       # with the training memory of the request's optimizer
    if task.detector is not None:     # the published task figures: data, looked up fresh (never cached)
        from ..models.detectors.published import task_fields

        record = {**record, **task_fields(task.model, task.detector)}
    if task.segmenter is not None:
        from ..models.segmenters.published import task_fields as segmenter_task_fields

        record = {**record, **segmenter_task_fields(task.model, task.segmenter, task.img_size.hw)}
    if task.slide is not None:
        record = {**record, **_slide_fields(task)}
    return record


def _slide_fields(task: Task) -> dict:
    """mmseg's slide test of the segmenter at this size (zoo.models.segmenters.slide): its windows, and the
    inference MACs of one window (counted at the window's size) and of all of them."""
    from ..models.segmenters.slide import grid

    crop, stride = task.slide
    height, width = task.img_size.hw
    window = Size(min(crop, height), min(crop, width))
    grids = [grid(height, crop, stride), grid(width, crop, stride)]
    window_macs = counted(task.request.per_image.replace(img_size=window))["macs"]
    return {"slide_windows": grids, "slide_window_macs": window_macs, "slide_macs": grids[0] * grids[1] * window_macs}
