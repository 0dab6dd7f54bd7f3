"""zoo.select's question, made once from its options: what every candidate is built and counted as (a Request
template, zoo.runs.request), how the survivors are timed (a Timing, zoo.runs.tasks), the bounds they must meet
(Constraints) and how the answer is decided and kept. `check_query` checks the options (the command line's text
or the API's values) and builds it; nothing in a Query restates a field of the three it holds."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ..errors import UsageError
from ..runs.request import Request
from ..runs.tasks import Timing

RANKS = ("top1", "imagenet_v2", "gmacs", "latency", "imgs_per_s", "box_ap", "mask_ap", "miou", "miou_ms")
TASK_RANKS = ("box_ap", "mask_ap")     # published COCO AP of the detector's recipe: with --detector
SEG_RANKS = ("miou", "miou_ms")        # published ADE20K mIoU of the segmenter's recipe: with --segmenter
MEASURED_RANKS = ("latency", "imgs_per_s")
LATENCY_STATS = ("p50", "p99")
DEFAULT_BUDGET_S = 300.0        # an interactive run's wait; every answer within it says what it is sure of
ANY_MODEL = "*"                 # the template's model: each candidate's name replaces it (Query.request_for)


@dataclass(frozen=True)
class Constraints:
    """The bounds a candidate must meet, in the order the answer lists them (None: not asked; else a number within
    zoo.options.values.BOUNDS). MiB are 2**20 bytes, max_params is in millions, latencies are per batch."""
    max_gmacs: Optional[float] = None
    max_params: Optional[float] = None
    max_act_mib: Optional[float] = None
    max_serve_mib: Optional[float] = None
    max_train_mib: Optional[float] = None       # weights, gradients, optimizer state, training activations
    min_top1: Optional[float] = None
    max_latency_ms: Optional[float] = None
    min_imgs_per_s: Optional[float] = None

    def asked(self) -> dict:
        """The constraints asked, by name, in order (the stored answer's "constraints")."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Query:
    """One checked zoo.select question (check_query or Query.of builds it)."""
    models: list                       # registry names and timm:<name>, in the order asked
    request: Request                   # the template: model ANY_MODEL, the size counted (after --pad-to), the
    #                                    batch (or "auto" with max_serve_mib), dtype, heads; optimizer as asked
    timing: Timing                     # how survivors are timed (device resolved)
    constraints: Constraints = Constraints()
    pad_to: Optional[int] = None       # each side padded up to a multiple of this first (detection: 32)
    padded_from: Optional[str] = None  # the size asked for, when pad_to changed it
    pretraining: Optional[list] = None  # the shown checkpoint's pretraining groups (None: any)
    weights: str = "default"           # whose accuracy: default (timm's pretrained=True), paper, best
    weights_available: bool = False    # only models with timm weights evaluated at this size
    latency_stat: str = "p50"
    allow_noisy: bool = False          # decide on noisy timings too (else: "undecided")
    wait_quiet: Optional[float] = None  # seconds to wait for a quiet machine before each timing
    budget_s: float = DEFAULT_BUDGET_S  # timing stops here; the answer so far is marked partial
    time_all: bool = False             # time every candidate (else: stop once none can beat the best)
    rank: str = "top1"
    out: Optional[str] = None          # where rows and the answer go (checked; the user data folder by default)
    save: bool = True

    @classmethod
    def of(cls, models=None, resolution=224, **options) -> Query:
        """The checked Query of the options by their flat names (OPTIONS), as select() and the command line take
        them: Query.of(["deit_ti"], 384, max_gmacs=20). UsageError (one line) for bad options, before any work."""
        return check_query({"models": models, "resolution": resolution, **options})

    @property
    def resolution(self):
        """The size counted as the answer writes it: a side or (H, W)."""
        return self.request.img_size.compact

    @property
    def measured(self) -> bool:
        c = self.constraints
        return c.max_latency_ms is not None or c.min_imgs_per_s is not None or self.rank in MEASURED_RANKS

    def request_for(self, model: str, batch_size: int) -> Request:
        """What `model` is counted as at `batch_size`: the template with its name, the detector as that backbone
        means it (zoo.models.detectors), the optimizer only with a training step."""
        from ..models.detectors.specs import resolve_detector

        asked = self.request
        detector = None if asked.detector is None else resolve_detector(model, asked.detector)
        return asked.replace(model=model, batch_size=batch_size, detector=detector,
                             optimizer=asked.optimizer if asked.train else None)

    def flat(self) -> dict:
        """Every option by its flat name, in OPTIONS' order, JSON-able (the plan file's "query", the answer's)."""
        own = {f.name for f in dataclasses.fields(self)}
        values = {"resolution": self.resolution, "predict": None}    # a Query never predicts (zoo.select.predicted)
        for name in OPTIONS:
            holder = next((h for h in (self.constraints, self.timing, self.request) if name in _names(h)), None)
            if name not in values:
                values[name] = getattr(self, name) if name in own else getattr(holder, name)
        return {name: values[name] for name in OPTIONS}


def _names(holder) -> set[str]:
    return {f.name for f in dataclasses.fields(holder)}


# The options by their flat names (the command line's, with _ for -), in the order plan files and answers list
# them; each names a field of the Query or of the Request, Timing or Constraints it holds ("resolution": the
# request's img_size; "predict": answered by zoo.select.predicted, never a Query).
OPTIONS = ("models", "resolution", "pad_to", "pretraining", "weights", "weights_available", "min_top1", "max_params",
           "max_gmacs", "max_act_mib", "max_serve_mib", "max_train_mib", "max_latency_ms", "min_imgs_per_s",
           "batch_size", "dtype", "features", "detector", "segmenter", "frozen_stages", "train", "optimizer",
           "latency_stat", "device", "threads", "quick", "iters", "min_seconds", "backend", "channels_last", "compile",
           "allow_noisy", "wait_quiet", "budget_s", "time_all", "predict", "rank", "out", "save", "padded_from")
# The API's defaults where they are not the field's own: every model, a 224 side, no prediction; SGD (a Request
# carries an optimizer only with a training step, Query.request_for); the device resolved from what is there; the
# dtype the mode's own (zoo.options.dtype_of: fp32 measured, bf16 predicted).
_API_DEFAULTS = {"models": None, "resolution": 224, "predict": None, "optimizer": "sgd", "device": "auto", "dtype": None}


def _defaults() -> dict:
    """Each option's default (the API's): _API_DEFAULTS, else the default of the field that holds it."""
    fields = {f.name: f for holder in (Request, Timing, Constraints, Query) for f in dataclasses.fields(holder)}
    return {name: _API_DEFAULTS[name] if name in _API_DEFAULTS else fields[name].default for name in OPTIONS}


DEFAULTS = _defaults()


def batch_option(text: str | int, max_serve_mib: float | None) -> int | str:
    from .values import number

    if str(text) == "auto":
        if max_serve_mib is None:
            raise UsageError("--batch-size auto: needs --max-serve-mib (the largest batch whose serving memory fits)")
        return "auto"
    return number(text, "batch-size")


def _check_detector(detector: str | None, rank: str, measured: bool) -> None:
    """--detector: a known name, counted constraints only (timing a whole detector is not a select screen);
    --rank box_ap / mask_ap only with it."""
    from .values import choice

    if detector is None:
        if rank in TASK_RANKS:
            raise UsageError(f"--rank {rank}: the published COCO AP of a detector recipe: needs --detector")
        return
    from ..models.detectors.specs import DETECTOR_NAMES

    choice(detector, DETECTOR_NAMES, "detector")
    if measured:
        raise UsageError("--detector: counted constraints only (params, GMACs, memory); select does not time "
                         "whole detectors (no --max-latency-ms, --min-imgs-per-s, --rank latency/imgs_per_s)")


def check_query(asked: dict) -> Query:
    """The Query of options by their flat names (OPTIONS; the rest take DEFAULTS), every one checked, in this
    order, with one UsageError before any work. TypeError for a name that is no option."""
    from ..store.data_dir import out_or_default
    from ..store.safe_io import usable_path
    from .values import (check_memory_override, check_out_dir, choice, frozen_stages_option, model_names, number,
                         one_size, pad_size)
    from . import OPTIMIZERS, check_heads, dtype_of, pretraining_option, timing_of, weights_option

    unknown = sorted(set(asked) - set(OPTIONS))
    if unknown:
        raise TypeError(f"zoo.select: no option {', '.join(unknown)}")
    o = {**DEFAULTS, **asked}
    models = model_names(o["models"] if isinstance(o["models"], str) else ",".join(o["models"] or ["all"]))
    size = one_size(o["resolution"], "resolution")
    pad_to = None if o["pad_to"] is None else number(o["pad_to"], "pad-to")
    padded = pad_size(size, pad_to)
    constraints = Constraints(**{k: None if o[k] is None else number(o[k], k.replace("_", "-"))
                                 for k in _names(Constraints)})
    train = o["train"] or constraints.max_train_mib is not None
    pretraining, weights = pretraining_option(o["pretraining"]), weights_option(o["weights"])
    batch_size = batch_option(o["batch_size"], constraints.max_serve_mib)
    rank = choice(o["rank"], RANKS, "rank")
    measured = constraints.max_latency_ms is not None or constraints.min_imgs_per_s is not None or \
        rank in MEASURED_RANKS
    _check_detector(o["detector"], rank, measured)
    frozen = None if o["frozen_stages"] is None else frozen_stages_option(str(o["frozen_stages"]))
    if o["segmenter"] is not None:
        from ..models.segmenters.specs import SEGMENTERS

        choice(o["segmenter"], tuple(SEGMENTERS), "segmenter")
    check_heads(o["features"], frozen, o["detector"], o["segmenter"])
    if rank.startswith("miou") and o["segmenter"] is None:
        raise UsageError(f"--rank {rank}: a segmenter's published ADE20K mIoU; needs --segmenter")
    choice(o["latency_stat"], LATENCY_STATS, "latency-stat")
    choice(o["optimizer"], OPTIMIZERS, "optimizer")
    o["dtype"] = dtype_of(o["dtype"], predicting=False)
    timing = timing_of(Timing(**{name: o[name] for name in _names(Timing)}), [o["backend"]], o["dtype"], train)
    check_memory_override()
    budget_s = number(o["budget_s"], "budget-s")
    if o["predict"] is not None:          # select() and zoo.select.predicted answer --predict, never a Query
        raise UsageError("--predict: answered by zoo.select.predicted (select(..., predict=DEVICE))")
    wait_quiet = None if o["wait_quiet"] is None else number(o["wait_quiet"], "wait-quiet")
    out = out_or_default(o["out"])
    if measured and o["save"]:
        out = str(check_out_dir(out))
    else:
        usable_path(out, "--out")        # read for stored rows: a path no folder can have is refused all the same
    request = Request(ANY_MODEL, padded, batch_size, o["dtype"], train=train, features=o["features"],
                      frozen_stages=frozen, detector=o["detector"], segmenter=o["segmenter"], optimizer=o["optimizer"])
    own = {name: o[name] for name in ("weights_available", "latency_stat", "allow_noisy", "time_all", "save")}
    return Query(models, request, timing, constraints, pad_to=pad_to,
                 padded_from=size.label if padded != size else None, pretraining=pretraining, weights=weights, wait_quiet=wait_quiet, budget_s=budget_s, rank=rank,
                 out=out, **own)


def check_from_plan(given: list[str], path: str, plan: dict | None = None) -> None:
    """--from-plan FILE: no query option beside it (`given`: those that differ from their defaults; one run could
    not say which query it answered), checked before FILE is read; then candidates left in the `plan` read."""
    if given:
        raise UsageError(f"--from-plan: the plan fixes the query; drop --{given[0].replace('_', '-')}")
    if plan is not None and not plan["candidates"]:
        raise UsageError(f"--from-plan: {path!r} has no candidates left to time")


def check_save_plan(q: Query) -> None:
    """--save-plan FILE: something to write (not --no-save) and something to time on the serving machine."""
    if not q.save:
        raise UsageError("--save-plan writes FILE and --no-save writes nothing: drop one")
    if not q.measured:
        raise UsageError("--save-plan: nothing to time (no --max-latency-ms, --min-imgs-per-s or measured --rank)")
