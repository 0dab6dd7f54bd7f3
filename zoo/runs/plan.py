"""Checking a comparison's options and turning them into tasks; every error is a UsageError (exit 2).

Everything is checked before any work starts and before anything is written, including options
that only matter for some metrics (a device is checked even when only counting).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from analysis.size import Size
from analysis.timing.fingerprint import available_cores
from analysis.vocab import DEVICES, DTYPE_NAMES, resolve_device

from ..errors import UsageError, ZooError
from ..models.detectors.specs import resolve_detector
from ..models.registry import TIMM_PREFIX, create_model, get_spec, list_models
from ..models.spec import cannot_take
from .safe_io import check_out_dir  # noqa: F401  (the commands' --out check, here beside the other checks)
from .request import Request
from .tasks import Task, Timing, skipped_row

METRICS = ("cost", "memory", "throughput", "train")
DEFAULT_METRICS = ("cost", "memory", "throughput")
# Bounds: an input side past 65,536 px or a batch past 2^20 is no image batch, and their product
# must stay inside what torch can index (numel < 2^63).
MAX_SIDE = 65_536
MAX_BATCH = 1 << 20
MAX_ITERS = 1_000_000       # timed steps: a bound against typos, far past any p99's need
MAX_SECONDS = 86_400        # --min-seconds, --wait-quiet: one day, a bound against typos like --iters

def split_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"--{what}: expected a comma-separated list with no empty items, got {text!r}")
    return items


def positive_int(item: str, what: str, limit: int) -> int:
    try:
        value = int(item)
    except ValueError:
        raise UsageError(f"--{what}: {item!r} is not an integer") from None
    if value <= 0:
        raise UsageError(f"--{what}: {value} is not positive")
    if value > limit:
        raise UsageError(f"--{what}: {value} is larger than archzoo's bound of {limit:,}")
    return value


def non_negative_int(item: str, what: str, limit: int) -> int:
    """0 or a positive int up to `limit`, or a UsageError naming the option."""
    return 0 if item.strip() == "0" else positive_int(item.strip(), what, limit)


def frozen_stages_option(item: str) -> int | None:
    """--frozen-stages as mmdetection reads frozen_stages: -1 freezes nothing (None: the rows of no freezing),
    0 the stem only, K the stem and stages 1..K."""
    if item.strip() == "-1":
        return None
    if item.strip().startswith("-") and item.strip()[1:].isdigit():     # "not positive" would hide 0 and -1
        raise UsageError(f"--frozen-stages: {item.strip()} is below -1; -1 freezes nothing, 0 the stem, K the stem "
                         f"and stages 1..K")
    return non_negative_int(item, "frozen-stages", 16)


def finite_number(text, what: str) -> float:
    """A finite float, or a UsageError naming the option."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"--{what}: {text!r} is not a finite number")
    return value


def positive_number(text: str, what: str, limit: float = MAX_SECONDS) -> float:
    value = finite_number(text, what)
    if value <= 0:
        raise UsageError(f"--{what}: {text} is not a positive number")
    if value > limit:
        raise UsageError(f"--{what}: {text} is larger than archzoo's bound of {limit:,g}")
    return value


def positive_ints(text: str, what: str, limit: int) -> list[int]:
    return list(dict.fromkeys(positive_int(item, what, limit) for item in split_list(text, what)))


def sizes(text: str, what: str = "resolutions") -> list[Size]:
    """"224,384,800x1344" -> the Sizes (Size.parse): a side, or HEIGHTxWIDTH (800x800 is the side 800);
    duplicates once. `what`: the option the user typed, named in every message."""
    found = []
    for item in split_list(text, what):
        try:
            size = Size.parse(item)
        except ValueError as e:
            raise UsageError(f"--{what}: {e}") from None
        found.append(checked_size(size, what))
    return list(dict.fromkeys(found))


def one_size(value, what: str) -> Size:
    """One size: the command line's side or HEIGHTxWIDTH (Size.parse, through `sizes`); the API's side, (H, W)
    or Size, checked as it is (never through text). A UsageError naming the option otherwise."""
    if isinstance(value, str):
        if "," in value or not value.strip():
            raise UsageError(f"--{what}: one side or HEIGHTxWIDTH (800x1344), not a list ({value!r})")
        return sizes(value, what)[0]
    try:
        size = Size.of(value)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--{what}: {e}") from None
    return checked_size(size, what)


def checked_size(size: Size, what: str) -> Size:
    """`size` within archzoo's bound on a side (MAX_SIDE), or a UsageError naming the option."""
    for side in size.hw:
        if side > MAX_SIDE:
            raise UsageError(f"--{what}: {side} is larger than archzoo's bound of {MAX_SIDE:,}")
    return size


def pad_size(size: Size, multiple: int | None) -> Size:
    """Each side rounded up to a multiple of `multiple` (as detection pipelines pad images to 32); None: as is."""
    if not multiple:
        return size
    padded = [-(-side // multiple) * multiple for side in size.hw]
    if max(padded) > MAX_SIDE:
        raise UsageError(f"--pad-to: {size.label} padded up to a multiple of {multiple} is "
                         f"{'x'.join(map(str, padded))} px, past archzoo's bound of {MAX_SIDE:,} px a side")
    return Size(*padded)


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


def check_device(device: str, local: bool = True) -> str:
    """A known device name; run here (local), the one it means on this machine ("auto" -> cpu or cuda),
    so rows say where they ran and --resume finds them whichever way the device was asked for. With
    Ray the GPUs are the workers': "auto" stays for them to resolve."""
    choice(device, DEVICES, "device")
    if device == "cpu" or not local:      # nothing to ask torch (importing it takes over a second)
        return device
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA GPU is available on this machine (use cpu or auto)")
    return resolve_device(device).type if local else device


def check_threads(text: str | None) -> int | None:
    if text is None:
        return None
    if "," in text:
        raise UsageError(f"--threads: one number of CPU threads, not a list ({text!r})")
    cores = available_cores()
    threads = positive_int(text.strip(), "threads", MAX_BATCH)
    if threads > cores:
        raise UsageError(f"--threads {threads}: this machine lets archzoo use {cores} cores")
    return threads


def check_memory_override() -> None:
    """$ARCHZOO_AVAILABLE_MEMORY_BYTES, when set, is a whole number of bytes (a UsageError naming it)."""
    from analysis.timing.host_memory import OVERRIDE_ENV, override_bytes

    text = os.environ.get(OVERRIDE_ENV, "")
    if text.strip():
        try:
            override_bytes(text)
        except ValueError as e:
            raise UsageError(str(e)) from None


def check_dtype(dtype: str) -> str:
    return choice(dtype, DTYPE_NAMES, "dtype")


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


NO_STAGES = "has blocks, not stages (CNNs and Swin have stages)"


def slide_option(text: str | None, segmenter: str | None, metrics: list[str]) -> tuple[int, int] | None:
    """--slide CROP,STRIDE: mmseg's sliding-window test, counted on a segmenter's cost row (not timed)."""
    if text is None:
        return None
    from ..models.segmenters.slide import check_slide

    if segmenter is None:
        raise UsageError("--slide: the sliding-window test of a segmenter; needs --segmenter")
    if "throughput" in metrics:
        raise UsageError("--slide: counted, not timed (timing runs the whole image); drop throughput from --metrics")
    items = split_list(text, "slide")
    if len(items) != 2:
        raise UsageError(f"--slide: expected CROP,STRIDE (two px sides, e.g. 512,341), got {text!r}")
    crop, stride = (positive_int(item, "slide", MAX_SIDE) for item in items)
    why = check_slide(crop, stride)
    if why:
        raise UsageError(f"--slide {text}: {why}")
    return crop, stride


def no_stages(model: str) -> bool:
    """Whether `model` has blocks instead of stages to freeze (a plain ViT, ViTDet's backbone)."""
    spec = get_spec(model)
    return spec.is_token_model or spec.family == "vitdet"


def check_stages(models: list[str], frozen_stages: int | None, detector: str | None, features: bool,
                 segmenter: str | None = None) -> None:
    """--frozen-stages and --detector need backbones with stages (maps at strides 4-32); --segmenter takes a
    plain ViT too (through its MultiLevelNeck). The options' own rules (one head, ...) are zoo.options.check_heads'."""
    for model in models:
        spec = get_spec(model)
        if model.startswith(TIMM_PREFIX):
            continue
        if segmenter == "sem_fpn" and spec.is_token_model:
            raise UsageError(f"--segmenter sem_fpn: {model} is a plain ViT; semantic FPN takes maps at strides 4-32")
        if detector and spec.is_token_model:
            raise UsageError(f"--detector: {model} gives one stride-{spec.patch_size} map, not maps at strides 4-32 "
                             f"(use vitdet_b16, vitdet_l16 or vitdet_h16)")
        if frozen_stages is not None and no_stages(model):
            raise UsageError(f"--frozen-stages: {model} {NO_STAGES}")


def plan_tasks(models: list[str], resolutions: list[Size] | None, batch_sizes: list[int], metrics: list[str],
               backends: tuple[str, ...] = ("eager",), pad_to: int | None = None, timing: Timing | None = None,
               **fields) -> Plan:
    """Tasks for every model x size x batch, each size checked against each model's rule here, once: a size
    no model takes is a UsageError, one some cannot take a skipped row for them. `fields`: what the model is
    built as (dtype, features, frozen_stages, detector, segmenter: every task; optimizer, slide: cost tasks); `timing`:
    how timed tasks are timed (Timing() when None), each once per backend, one after the other (interleaved,
    so the backends see the same machine). pad_to: each size is padded up to a
    multiple of it first, and its tasks record the size asked for (padded_from)."""
    dtype = fields.pop("dtype", "fp32")
    built = {"features": fields.pop("features", False), "frozen_stages": fields.pop("frozen_stages", None),
             "detector": fields.pop("detector", None), "segmenter": fields.pop("segmenter", None)}
    check_stages(models, built["frozen_stages"], built["detector"], built["features"], built["segmenter"])
    optimizer = fields.pop("optimizer", None)     # a cost task's (training memory); timing steps are SGD's
    slide = fields.pop("slide", None)             # a cost task's: mmseg's slide test, counted beside the whole image
    if fields:
        raise TypeError(f"plan_tasks: no option {', '.join(sorted(fields))}")
    timing = timing or Timing()
    asked = {pad_size(s, pad_to): s.label for s in resolutions or [] if pad_size(s, pad_to) != s}
    resolutions = list(dict.fromkeys(pad_size(s, pad_to) for s in resolutions)) if resolutions else resolutions
    accepts = {(m, s): get_spec(m).rule.accepts(s) for m in models for s in resolutions or [get_spec(m).native]}
    for size in resolutions or []:
        if not any(accepts[m, size] for m in models):
            rules = "; ".join(f"{m}: {get_spec(m).rule.describe()}, nearest "
                              f"{', '.join(n.label for n in get_spec(m).rule.nearest(size))}" for m in models)
            raise UsageError(f"--resolutions {size.label}: no requested model can take it ({rules})")
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
