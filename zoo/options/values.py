"""The command line's values, each parsed and checked in one place with one UsageError (exit 2) naming its
option: lists, bounded numbers, sizes (Size.parse), model names, choices, the device and threads, whose accuracy
(--weights) and which pretraining (--pretraining; zoo.report parses these two here too). zoo.options'
command rules (compare.py, select.py) and zoo.select.predicted build on them."""
from __future__ import annotations

import math
import os
from typing import Iterable

from analysis.size import Size
from analysis.timing.fingerprint import available_cores
from analysis.vocab import DEVICES, DTYPE_NAMES, resolve_device

from ..errors import UsageError
from ..models.registry import TIMM_PREFIX, get_spec, list_models
from ..store.safe_io import check_out_dir  # noqa: F401  (the commands' --out check, here beside the other checks)

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


def pad_size(size: Size, multiple: int | None) -> Size:
    """Each side rounded up to a multiple of `multiple` (zoo.runs.plan.padded), or a UsageError past MAX_SIDE."""
    from ..runs.plan import padded

    grown = padded(size, multiple)
    if max(grown.hw) > MAX_SIDE:
        raise UsageError(f"--pad-to: {size.label} padded up to a multiple of {multiple} is "
                         f"{grown.height}x{grown.width} px, past archzoo's bound of {MAX_SIDE:,} px a side")
    return grown


def weights_option(text: str | None) -> str:
    """--weights: one of zoo.models.accuracy.WEIGHT_POLICIES (default: default)."""
    from ..models.accuracy import WEIGHT_POLICIES

    if text is None:
        return "default"
    if text not in WEIGHT_POLICIES:
        raise UsageError(f"--weights: {text!r} is not one of {', '.join(WEIGHT_POLICIES)}")
    return text


def pretraining_option(text: str | Iterable[str] | None) -> list[str] | None:
    """--pretraining: a comma list (or list) of zoo.models.cards.PRETRAINING groups, or None for all."""
    from ..models.cards import PRETRAINING

    if text is None:
        return None
    items = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text)
    for item in items:
        if item not in PRETRAINING:
            raise UsageError(f"--pretraining: unknown group {item!r}; expected some of {', '.join(PRETRAINING)}")
    return list(dict.fromkeys(items))
