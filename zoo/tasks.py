"""One unit of measurement (model x resolution x batch x setting) and the function that runs it.

Tasks are plain, picklable data, so any executor (in-process, a subprocess, a Ray worker) can run
them; `run_task` returns one results-store row, failures included.
"""
from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass

import torch

from . import __version__
from .registry import get_spec

SCHEMA_VERSION = 1
KINDS = ("cost", "throughput")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
QUICK_TIMING = dict(warmup=1, min_iters=3, min_seconds=0.3)
DEFAULT_TIMING = dict(warmup=3, min_iters=10, min_seconds=2.0)


@dataclass(frozen=True)
class Task:
    kind: str                 # "cost": params, MACs, attention, activation memory (meta); "throughput": timed
    model: str
    img_size: int
    batch_size: int = 1
    dtype: str = "fp32"
    train: bool = False       # cost: also count the training step; throughput: time a training step
    device: str = "cpu"       # throughput only; cost always counts on "meta"
    threads: int | None = None
    quick: bool = False       # throughput: short runs

    @property
    def settings(self) -> dict:
        """What, besides model, resolution and batch, makes two rows comparable."""
        fields = dataclasses.asdict(self)
        for name in ("kind", "model", "img_size", "batch_size"):
            fields.pop(name)
        if self.kind == "cost":
            for name in ("device", "threads", "quick"):
                fields.pop(name)
        return fields


def software() -> dict:
    import timm

    return {"archzoo": __version__, "torch": torch.__version__.split("+")[0], "timm": timm.__version__}


def row_key(row: dict) -> tuple:
    """Identity of a row for --resume: the same task measured in the same environment."""
    env = row.get("env", {})
    machine = (env.get("cpu_model"), env.get("gpu_name")) if row["kind"] == "throughput" else ()
    return (row["kind"], row["model"], row["img_size"], row["batch_size"],
            tuple(sorted(row["settings"].items())), tuple(sorted(row["software"].items())), machine)


def machine(device: str) -> dict:
    """The fingerprint fields that tell one machine's throughput rows from another's."""
    from analysis.fingerprint import cpu_model_name, gpu_name

    # NB: gpu_name is None on a driver without a GPU (a Ray sweep onto GPU workers), not an error
    return {"cpu_model": cpu_model_name(), "gpu_name": gpu_name(torch.device("cpu" if device == "cpu" else "cuda"))}


def task_key(task: Task) -> tuple:
    """The row_key that running `task` here would give, to skip it on --resume."""
    env = machine(task.device) if task.kind == "throughput" else {}
    return row_key({**base_row(task), "env": env})


def base_row(task: Task) -> dict:
    """The fields every row of `task` has, whatever became of the measurement."""
    return {"schema": SCHEMA_VERSION, "kind": task.kind, "model": task.model, "img_size": task.img_size,
            "batch_size": task.batch_size, "settings": task.settings, "software": software()}


def run_task(task: Task, macs: float | None = None) -> dict:
    """Measure one task. Never raises for a failed measurement: the row carries the error."""
    row = base_row(task)
    spec = get_spec(task.model)
    row["family"] = spec.family
    if not spec.rule.accepts(task.img_size):
        row["skipped"] = f"{task.model} takes sides {spec.rule.describe()}"
        return row
    try:
        if task.kind == "cost":
            row.update(_cost(task))
        else:
            row.update(_throughput(task, macs))
    except Exception as e:  # recorded, never swallowed: the row says what went wrong
        row["failed"] = f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc(limit=5)
    return row


def _cost(task: Task) -> dict:
    from analysis.cost import cost_record

    record = cost_record(task.model, img_size=task.img_size, batch_size=task.batch_size,
                         dtype=DTYPES[task.dtype], train=task.train)
    record["macs_per_image"] = record["macs"] // task.batch_size
    record["env"] = {"device": "meta"}
    return record


def macs_per_image(model: str, img_size: int) -> int:
    from analysis.cost import cost_record

    return cost_record(model, img_size=img_size, batch_size=1, train=False)["macs"]


def _throughput(task: Task, macs: float | None) -> dict:
    from analysis.fingerprint import FINGERPRINT_FIELDS
    from analysis.timing import measure_throughput

    timing = QUICK_TIMING if task.quick else DEFAULT_TIMING
    macs = macs if macs is not None else macs_per_image(task.model, task.img_size)
    record = measure_throughput(task.model, img_size=task.img_size, batch_size=task.batch_size,
                                device=task.device, dtype=task.dtype, threads=task.threads,
                                mode="train" if task.train else "inference", macs=macs, **timing)
    record["env"] = {k: record.get(k) for k in FINGERPRINT_FIELDS}
    return record
