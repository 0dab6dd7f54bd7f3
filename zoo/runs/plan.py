"""Turning a checked comparison into tasks: every model x size x batch, each size checked against each model's
rule once (a skipped row where a model refuses it). The options and their rules are zoo.options' (compare.py):
the only refusal left here is a timm: model's size, which needs the model built on meta (check_timm_size).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.size import Size

from ..errors import UsageError, ZooError
from ..models.detectors.specs import resolve_detector
from ..models.registry import TIMM_PREFIX, create_model, get_spec
from ..models.spec import cannot_take
from .request import Request
from .tasks import Task, Timing, skipped_row


def padded(size: Size, multiple: int | None) -> Size:
    """Each side rounded up to a multiple of `multiple` (as detection pipelines pad images to 32); None: as is."""
    return Size(*(-(-side // multiple) * multiple for side in size.hw)) if multiple else size


def check_timm_size(model: str, img_size: Size, features: bool = False) -> None:
    """An ad-hoc timm model has no recorded rule: build it at `img_size` and run it on meta, and
    refuse the size up front if timm does (its constructor's or forward's own check)."""
    import torch

    try:
        module = create_model(model, img_size=img_size, device="meta", features=features)
        module(torch.empty(1, 3, *img_size.hw, device="meta"))
    except ZooError:
        raise
    except Exception as e:  # noqa: BLE001 - timm's own size checks raise AssertionError, ValueError, ...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise UsageError(f"{model} {cannot_take(img_size, f'timm says {type(e).__name__}: {first}')}") from None


@dataclass
class Plan:
    tasks: list[Task]
    skipped: list[dict]       # rows for (model, size) pairs a model's rule refuses (`skipped` says why)


def plan_tasks(models: list[str], resolutions: list[Size] | None, batch_sizes: list[int], metrics: list[str],
               backends: tuple[str, ...] = ("eager",), pad_to: int | None = None, timing: Timing | None = None,
               **fields) -> Plan:
    """Tasks for every model x size x batch, each size checked against each model's rule here, once: a skipped
    row for a model that cannot take it (a size no model takes is refused before: zoo.options.compare). `fields`: what the model is
    built as (dtype, features, frozen_stages, detector, segmenter: every task; optimizer, slide: cost tasks); `timing`:
    how timed tasks are timed (Timing() when None), each once per backend, one after the other (interleaved,
    so the backends see the same machine). pad_to: each size is padded up to a
    multiple of it first, and its tasks record the size asked for (padded_from)."""
    dtype = fields.pop("dtype", "fp32")
    built = {"features": fields.pop("features", False), "frozen_stages": fields.pop("frozen_stages", None),
             "detector": fields.pop("detector", None), "segmenter": fields.pop("segmenter", None)}
    optimizer = fields.pop("optimizer", None)     # a cost task's (training memory); timing steps are SGD's
    slide = fields.pop("slide", None)             # a cost task's: mmseg's slide test, counted beside the whole image
    if fields:
        raise TypeError(f"plan_tasks: no option {', '.join(sorted(fields))}")
    timing = timing or Timing()
    asked = {padded(s, pad_to): s.label for s in resolutions or [] if padded(s, pad_to) != s}
    resolutions = list(dict.fromkeys(padded(s, pad_to) for s in resolutions)) if resolutions else resolutions
    accepts = {(m, s): get_spec(m).rule.accepts(s) for m in models for s in resolutions or [get_spec(m).native]}
    for model in models:
        if model.startswith(TIMM_PREFIX):
            for size in resolutions or [get_spec(model).native]:
                check_timm_size(model, size, built["features"])
    tasks, skipped = [], []
    count = bool({"cost", "memory", "train"} & set(metrics))
    asked_detector = built["detector"]
    for model in models:
        if asked_detector is not None:      # the name as this backbone means it (its own recipe for vitdet_*)
            built["detector"] = resolve_detector(model, asked_detector)
        for img_size in resolutions or [get_spec(model).native]:
            if not accepts[model, img_size]:
                kind = "cost" if count else "throughput"
                skipped.append(skipped_row(Task.of(kind, Request(model, img_size, batch_sizes[0], dtype, **built))))
                continue
            padded_from = asked.get(img_size)
            for batch in batch_sizes:
                request = Request(model, img_size, batch, dtype, **built)       # what is built, counted and timed
                if count:
                    tasks.append(Task.of("cost", request.replace(train="train" in metrics, optimizer=optimizer),
                                         padded_from=padded_from, slide=slide))
                if "throughput" in metrics:
                    tasks += [Task.of("throughput", request, timing.replace(backend=backend), padded_from=padded_from)
                              for backend in backends]
                if "throughput" in metrics and "train" in metrics:
                    tasks.append(Task.of("throughput", request.replace(train=True), timing.replace(backend="eager"),
                                         padded_from=padded_from))
    return Plan(tasks, skipped)
