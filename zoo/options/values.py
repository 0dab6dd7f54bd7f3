"""The command line's values, each parsed and checked in one place with one UsageError (exit 2) naming its
option: lists, bounded numbers, sizes (Size.parse), model names, choices, the device and threads, whose accuracy
(--weights) and which pretraining (--pretraining; zoo.report parses these two here too). zoo.options'
command rules (compare.py, select.py) and zoo.select.predicted build on them."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Iterable

from analysis.size import Size
from analysis.timing.fingerprint import available_cores
from analysis.units import MIB
from analysis.vocab import DEVICES, DTYPE_NAMES, resolve_device

from ..errors import UsageError
from ..models.registry import TIMM_PREFIX, get_spec, list_models
from ..store.safe_io import check_out_dir  # noqa: F401  (the commands' --out check, here beside the other checks)
from ..store.schema import MAX_COUNT as INT64_MAX   # every count a row stores is an int64: a constraint's ceiling

# Bounds: an input side past 65,536 px or a batch past 2^20 is no image batch, and their product
# must stay inside what torch can index (numel < 2^63).
MAX_SIDE = 65_536
MAX_BATCH = 1 << 20
MAX_ITERS = 1_000_000       # timed steps: a bound against typos, far past any p99's need
MAX_SECONDS = 86_400        # --min-seconds, --wait-quiet: one day, a bound against typos like --iters
MAX_DEVICES = 65_536        # --gpus, --threads: past any machine's cores and any data-parallel job


@dataclass(frozen=True)
class Bound:
    """What one option's numbers may be: from `low` to `high` in `unit` (low itself refused when `above`: a
    positive number), whole numbers only when `whole`."""
    low: float
    high: float
    unit: str
    whole: bool = False
    above: bool = False


SIDE = Bound(1, MAX_SIDE, "px", whole=True)
BATCH = Bound(1, MAX_BATCH, "images", whole=True)
SECONDS = Bound(0, MAX_SECONDS, "s", above=True)
# THE table: every numeric option of every command, by its name on the command line (issue 54: the same kind of
# value had two limits, 65,536 and 2^20 for a batch; a constraint's ceiling is what a row can store).
BOUNDS = {
    "resolutions": SIDE, "resolution": SIDE, "pad-to": SIDE, "slide": SIDE,
    "batch-sizes": BATCH, "batch-size": BATCH,
    "iters": Bound(1, MAX_ITERS, "timed steps", whole=True),
    "threads": Bound(1, MAX_DEVICES, "CPU threads", whole=True),
    "gpus": Bound(1, MAX_DEVICES, "devices", whole=True),
    "frozen-stages": Bound(-1, 16, "stages", whole=True),
    "train-images": Bound(1, 1 << 40, "images per epoch", whole=True),
    "min-seconds": SECONDS, "budget-s": SECONDS,
    "wait-quiet": Bound(0, MAX_SECONDS, "s"),
    "latency-target-ms": Bound(0, MAX_SECONDS * 1e3, "ms per batch", above=True),
    "max-latency-ms": Bound(0, MAX_SECONDS * 1e3, "ms per batch", above=True),
    "min-imgs-per-s": Bound(0, 1e9, "images per second", above=True),
    "max-gmacs": Bound(0, INT64_MAX / 1e9, "GMACs per image"),
    "max-params": Bound(0, INT64_MAX / 1e6, "million parameters"),
    "max-act-mib": Bound(0, INT64_MAX / MIB, "MiB"), "max-serve-mib": Bound(0, INT64_MAX / MIB, "MiB"),
    "max-train-mib": Bound(0, INT64_MAX / MIB, "MiB"),
    "min-top1": Bound(0, 100, "%"),
    "price-per-hour": Bound(1e-3, 1e6, "USD per hour"),
    "epochs": Bound(0, 1e6, "epochs", above=True),
    "max-train-hours": Bound(0, 1e9, "hours", above=True),
}


def shown(value: float) -> str:
    """A bound as messages and docs write it: 65,536; 0.001; 9,223,372,037 (a fraction of a large one rounded)."""
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:g}"


def bounds_table() -> str:
    """BOUNDS as docs/hostile-inputs.md shows it (a markdown table; tests/test_numeric_options.py keeps them equal)."""
    lines = ["| option | from | to | unit | kind |", "|---|---|---|---|---|"]
    for option, b in BOUNDS.items():
        lines.append(f"| `--{option}` | {'above ' if b.above else ''}{shown(b.low)} | {shown(b.high)} | {b.unit} | "
                     f"{'whole number' if b.whole else 'number'} |")
    return "\n".join(lines) + "\n"


# ASCII digits only: Python's int() and float() also take other scripts' digits ('８') and underscores
# ('1_281_167'), which Size.parse, and so every size, refuses.
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")
DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def split_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"--{what}: expected a comma-separated list with no empty items, got {text!r}")
    return items


def number(value, option: str) -> int | float:
    """THE parser of every numeric option: the command line's text (ASCII digits, a point and an exponent) or the
    API's int or float, within BOUNDS[option]; a UsageError (one line) naming the option otherwise."""
    bound = BOUNDS[option]
    if isinstance(value, str):
        text = value.strip()
        if not (WHOLE_NUMBER if bound.whole else DECIMAL_NUMBER).fullmatch(text):
            what = "an integer" if bound.whole else "a number"
            ascii_only = "" if text.isascii() and "_" not in text else " (digits 0-9 only, no separators)"
            raise UsageError(f"--{option}: {value!r} is not {what}{ascii_only}")
        try:
            parsed = int(text) if bound.whole else float(text)
        except ValueError:      # over Python's 4,300 digits: far past every bound
            raise UsageError(f"--{option}: {text[:20]}... is larger than archzoo's bound of {shown(bound.high)}") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (isinstance(value, int) or not bound.whole):
        text, parsed = repr(value), value
    else:
        raise UsageError(f"--{option}: {value!r} is not {'an integer' if bound.whole else 'a number'}")
    if not math.isfinite(parsed):
        raise UsageError(f"--{option}: {value!r} is not a finite number")
    if parsed < bound.low or (bound.above and parsed == bound.low):
        if bound.whole and bound.low == 1:
            raise UsageError(f"--{option}: {parsed} is not positive")
        if bound.above and bound.low == 0:
            raise UsageError(f"--{option}: {text} is not a positive number")
        if bound.low == 0:
            raise UsageError(f"--{option}: {text!r} must be a finite number >= 0")
        raise UsageError(f"--{option}: {text} is below archzoo's bound of {shown(bound.low)} {bound.unit}")
    if parsed > bound.high:
        raise UsageError(f"--{option}: {text} is larger than archzoo's bound of {shown(bound.high)}")
    return parsed


def frozen_stages_option(item: str) -> int | None:
    """--frozen-stages as mmdetection reads frozen_stages: -1 freezes nothing (None: the rows of no freezing),
    0 the stem only, K the stem and stages 1..K."""
    text = str(item).strip()
    if WHOLE_NUMBER.fullmatch(text) and int(text) < -1:     # "below archzoo's bound" would hide what -1 and 0 mean
        raise UsageError(f"--frozen-stages: {int(text)} is below -1; -1 freezes nothing, 0 the stem, K the stem "
                         f"and stages 1..K")
    stages = number(item, "frozen-stages")
    return None if stages == -1 else stages


def positive_ints(text: str, what: str) -> list[int]:
    return list(dict.fromkeys(number(item, what) for item in split_list(text, what)))


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
        number(side, what)          # Size.parse took the text: ASCII digits, each side positive
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
    threads = number(text, "threads")
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
