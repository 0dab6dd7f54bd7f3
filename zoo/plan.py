"""Validating `zoo.compare`'s options and turning them into tasks; every error is a UsageError."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .registry import TIMM_PREFIX, get_spec, list_models
from .spec import ZooError
from .tasks import DTYPES, Task

METRICS = ("cost", "memory", "throughput", "train")
DEFAULT_METRICS = ("cost", "memory", "throughput")
FORMATS = ("table", "markdown", "csv", "json")
DEVICES = ("auto", "cpu", "cuda")


class UsageError(ZooError):
    """Bad command-line input: reported as one line on stderr, exit status 2."""


def split_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"--{what}: expected a comma-separated list with no empty items, got {text!r}")
    return items


def positive_ints(text: str, what: str) -> list[int]:
    values = []
    for item in split_list(text, what):
        try:
            value = int(item)
        except ValueError:
            raise UsageError(f"--{what}: {item!r} is not an integer") from None
        if value <= 0:
            raise UsageError(f"--{what}: {value} is not positive")
        values.append(value)
    return list(dict.fromkeys(values))


def model_names(text: str) -> list[str]:
    names: list[str] = []
    for item in split_list(text, "models"):
        if item == "all":
            names += list_models()
        elif any(c in item for c in "*?[") and not item.startswith(TIMM_PREFIX):
            matched = list_models(item)
            if not matched:
                raise UsageError(f"--models: {item!r} matches no registered model")
            names += matched
        else:
            get_spec(item)  # raises UnknownModelError naming the closest names
            names.append(item)
    return list(dict.fromkeys(names))


def choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise UsageError(f"--{what}: unknown {what} {value!r}; expected one of {', '.join(allowed)}")
    return value


def check_device(device: str) -> str:
    choice(device, DEVICES, "device")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA GPU is available on this machine (use cpu or auto)")
    return device


def check_out_dir(out: str) -> Path:
    """The nearest existing ancestor must be a writable folder; nothing is created here."""
    path = Path(out).resolve()
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--out: cannot write under {out!r} ({probe} is not a writable folder)")
    for sub in ("results", "reports"):
        if (path / sub).exists() and not os.access(path / sub, os.W_OK):
            raise UsageError(f"--out: {path / sub} is not writable")
    return path


@dataclass
class Plan:
    tasks: list[Task]
    skipped: list[dict]       # rows for model x resolution pairs a model cannot take


def plan_tasks(models: list[str], resolutions: list[int] | None, batch_sizes: list[int], metrics: list[str],
               dtype: str, device: str, threads: int | None, quick: bool) -> Plan:
    if resolutions:
        fits_any = [r for r in resolutions if any(get_spec(m).rule.accepts(r) for m in models)]
        if not fits_any:
            rules = "; ".join(f"{m}: {get_spec(m).rule.describe()}, nearest "
                              f"{', '.join(map(str, get_spec(m).rule.nearest(resolutions[0])))}" for m in models)
            raise UsageError(f"--resolutions {','.join(map(str, resolutions))}: no requested model can take "
                             f"{'it' if len(resolutions) == 1 else 'any of them'} ({rules})")
    tasks, skipped = [], []
    count = bool({"cost", "memory", "train"} & set(metrics))
    for model in models:
        spec = get_spec(model)
        for img_size in resolutions or [spec.native_size]:
            if not spec.rule.accepts(img_size):
                skipped.append({"model": model, "family": spec.family, "img_size": img_size,
                                "skipped": f"{model} takes sides {spec.rule.describe()}"})
                continue
            for batch in batch_sizes:
                if count:
                    tasks.append(Task("cost", model, img_size, batch, dtype, train="train" in metrics))
                if "throughput" in metrics:
                    tasks.append(Task("throughput", model, img_size, batch, dtype, device=device,
                                      threads=threads, quick=quick))
                if "throughput" in metrics and "train" in metrics:
                    tasks.append(Task("throughput", model, img_size, batch, dtype, train=True, device=device,
                                      threads=threads, quick=quick))
    return Plan(tasks, skipped)


def check_dtype(dtype: str) -> str:
    return choice(dtype, tuple(DTYPES), "dtype")
