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

import torch

from analysis.timing.latency import DEFAULT_PROTOCOL, QUICK_PROTOCOL
from analysis.vocab import DTYPES

from .._version import __version__
from ..models.registry import create_model, get_spec, map_shapes
from ..models.spec import Size, as_hw, canonical_size
from .schema import SCHEMA_VERSION, row_key, validate

OnRow = Callable[[dict], None]   # what executors hand each finished row to
# A timed row is marked noisy (and left out of fitted exponents) above either threshold: step latencies
# spread by more than a fifth of their mean, or other processes using over 15% of the machine's CPU.
NOISY_CV = 0.2
NOISY_FOREIGN_CPU_SHARE = 0.15


@dataclass(frozen=True)
class Task:
    kind: str                 # "cost": params, MACs, attention, activation memory (meta); "throughput": timed
    model: str
    img_size: Size            # a square side, or (H, W)
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

    def __post_init__(self):  # (224, 224) and 224 are one task; JSON turns tuples into lists
        object.__setattr__(self, "img_size", canonical_size(self.img_size))

    @property
    def settings(self) -> dict:
        """What, besides model, resolution and batch, makes two rows comparable."""
        fields = dataclasses.asdict(self)
        for name in ("kind", "model", "img_size", "batch_size"):
            fields.pop(name)
        if self.kind == "cost":
            for name in ("device", "threads", "quick", "channels_last", "compile", "backend"):
                fields.pop(name)
        return fields


def software() -> dict:
    from analysis.timing.fingerprint import timm_version

    return {"archzoo": __version__, "torch": torch.__version__.split("+")[0], "timm": timm_version()}


def base_row(task: Task) -> dict:
    """The fields every row of `task` has, whatever became of the measurement."""
    h, w = as_hw(task.img_size)
    return {"schema": SCHEMA_VERSION, "kind": task.kind, "model": task.model, "img_h": h, "img_w": w,
            "img_size": h if h == w else None, "batch_size": task.batch_size, "settings": task.settings,
            "software": software()}


def machine(device: str) -> dict:
    """The fingerprint fields that tell one machine's timed rows from another's (part of their key)."""
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


def failed_row(task: Task, error: str, family: str | None = None, detail: str | None = None) -> dict:
    """The one failed-row format, whatever failed (the measurement, a subprocess, a Ray worker)."""
    row = {**base_row(task), "family": family, "failed": error}
    if detail:
        row["traceback"] = detail
    return validate(row)


def run_task(task: Task, macs: int | None = None, peak: dict | None = None) -> dict:
    """Measure one task. Never raises for a failed measurement: the row carries the error.

    macs: per-image MACs of the model at this size (timed rows' MFU; counted here when None).
    peak: a GEMM peak for this device, dtype and threads (zoo.runs.peaks); probed when None.
    """
    spec = get_spec(task.model)
    if not spec.rule.accepts(task.img_size):
        return validate({**base_row(task), "family": spec.family,
                         "skipped": f"{task.model} takes sides {spec.rule.describe()}"})
    try:
        measured = _cost(task) if task.kind == "cost" else _throughput(task, macs, peak)
    except Exception as e:  # recorded, never swallowed: the row says what went wrong
        return failed_row(task, one_line(e), spec.family, "".join(traceback.format_tb(e.__traceback__, limit=-5)))
    return validate({**base_row(task), "family": spec.family, **measured})


def count(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
          features: bool = False, **overrides) -> dict:
    """Cost fields of a registry model (built on meta): what a cost row holds besides its identity."""
    from analysis.count.cost import cost_record

    module = create_model(model, img_size=img_size, device="meta", dtype=DTYPES[dtype], features=features, **overrides)
    record = cost_record(module, img_size, batch_size=batch_size, dtype=DTYPES[dtype], train=train)
    record.update(serving_memory(record, dtype))
    if features:
        record["features"] = map_shapes(module, img_size, overrides.get("in_chans", 3))   # the module just counted
    return {"tokens": get_spec(model).tokens(img_size), **record, "env": {"device": "meta"}}


def serving_memory(record: dict, dtype: str) -> dict:
    """Memory to serve a batch: weights at the dtype + the activation peak; for a training step also one
    gradient and one SGD momentum buffer per parameter (the step the harness times), at the dtype."""
    param_bytes = record["params"] * DTYPES[dtype].itemsize
    fields = {"serve_bytes": record["weight_bytes"] + record["act_peak_bytes"], "train_serve_bytes": None,
              "train_optimizer": None}
    if record.get("train_act_peak_bytes") is not None:
        fields.update(train_serve_bytes=record["weight_bytes"] + 2 * param_bytes + record["train_act_peak_bytes"],
                      train_optimizer="SGD with momentum: 1 state tensor per parameter (AdamW would add 1 more)")
    return fields


def counted(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
            features: bool = False) -> dict:
    """`count`, read from the user cache when the same count was made before (zoo.runs.count_cache)."""
    from .count_cache import cached_count

    return cached_count(count, model, img_size, batch_size, dtype, train, features)


def _cost(task: Task) -> dict:
    return counted(task.model, task.img_size, task.batch_size, task.dtype, task.train, task.features)


def _throughput(task: Task, macs: int | None, peak: dict | None) -> dict:
    from analysis.timing.harness import measure_throughput

    if macs is None:
        macs = counted(task.model, task.img_size, train=False, features=task.features)["macs"]
    model = create_model(task.model, img_size=task.img_size, features=task.features)
    protocol = QUICK_PROTOCOL if task.quick else DEFAULT_PROTOCOL
    if task.backend == "onnxruntime":
        from analysis.timing.onnx_runtime import measure_onnxruntime

        if task.train or task.dtype != "fp32" or task.channels_last or task.compile:
            raise ValueError("the onnxruntime backend times fp32 inference only (no --metrics train, --dtype, "
                             "--channels-last or --compile)")
        record = measure_onnxruntime(model, task.img_size, batch_size=task.batch_size, device=task.device,
                                     protocol=protocol, threads=task.threads, macs=macs, peak=peak)
    else:
        record = measure_throughput(model, task.img_size, batch_size=task.batch_size, device=task.device,
                                    dtype=task.dtype, mode="train" if task.train else "inference", protocol=protocol,
                                    channels_last=task.channels_last, compile=task.compile or False,
                                    threads=task.threads, macs=macs, peak=peak)
    if record["imgs_per_s"] is None:   # out of memory at every batch down to 1
        raise MemoryError(record["error"])
    record["noisy"] = bool(record["cv"] > NOISY_CV or (record["foreign_cpu_share"] or 0) > NOISY_FOREIGN_CPU_SHARE)
    return record
