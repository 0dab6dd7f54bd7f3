"""The selection behind `python -m zoo.select`: candidates screened by size rule, published accuracy,
counted cost and measured speed (in that order), ranked, with Pareto fronts and reasons for every exclusion."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Optional, Union

from ..errors import UsageError
from ..models.accuracy import (accuracy_at, accuracy_entries, checkpoint_at, entry_fields, pareto_front,
                              pretraining_of, teacher_groups)
from ..models.accuracy import pretraining_groups as checkpoint_groups
from ..models.registry import TIMM_PREFIX, get_spec
from ..models.spec import Size
from ..runs.data_dir import out_or_default
from ..runs.plan import (MAX_BATCH, MAX_SECONDS, MAX_SIDE, NO_STAGES, check_dtype, check_memory_override, check_out_dir,
                         choice, finite_number, frozen_stages_option, model_names, no_stages, one_size, pad_size,
                         positive_int, positive_number)
from ..options import BACKENDS, COMPILE_MODES  # noqa: F401 - zoo.select names them
from ..options import OPTIMIZERS, check_heads, pretraining_option, timing_of, weights_option
from ..options import SELECT_FORMATS as FORMATS
from ..runs.tasks import one_line
from ..console.signals import defer
from ..answers.text import num  # noqa: F401 - the callers' number format

from .rank import (FALLBACK_RANK, MEASURED_RANKS, RANKS, SEG_RANKS, TASK_RANKS,  # noqa: F401
                   _rank_field, _rank_key, _versus_next, effective_rank, pareto_axes, rank_screen, timing_key)
LATENCY_STATS = ("p50", "p99")
MIB = 2 ** 20
DEFAULT_BUDGET_S = 300.0        # an interactive run's wait; every answer within it says what it is sure of
# numeric constraints (all >= 0) -> their upper bound, if any
LIMITS = {"max_gmacs": None, "max_params": None, "max_act_mib": None, "max_serve_mib": None, "max_train_mib": None,
          "min_top1": 100.0, "max_latency_ms": None, "min_imgs_per_s": None}


@dataclass
class Query:
    """One zoo.select question. MiB are 2**20 bytes, max_params is in millions, latencies are per batch."""
    models: Union[list, str, None] = None        # names, wildcards, timm:<name>; None: the registry
    resolution: Union[Size, int, tuple, str] = 224   # one side, (H, W), a Size or "HxW" (checked: a side or (H, W))
    pad_to: Optional[int] = None                 # pad each side up to a multiple of this first (detection: 32)
    # constraints, in the order they apply (None: not asked)
    pretraining: Union[list, str, None] = None   # also chooses the checkpoint shown among these groups'
    weights: str = "default"                     # whose accuracy: default (timm's pretrained=True), paper, best
    weights_available: bool = False
    min_top1: Optional[float] = None
    max_params: Optional[float] = None
    max_gmacs: Optional[float] = None
    max_act_mib: Optional[float] = None
    max_serve_mib: Optional[float] = None
    max_train_mib: Optional[float] = None        # weights, gradients, optimizer state, training activations
    max_latency_ms: Optional[float] = None
    min_imgs_per_s: Optional[float] = None
    # what is counted and timed
    batch_size: Union[int, str] = 1              # or "auto" with max_serve_mib
    dtype: str = "fp32"
    features: bool = False                       # the backbone as a feature extractor (no pooling, no head)
    detector: Optional[str] = None               # count the whole detector on each backbone (zoo.models.detectors)
    segmenter: Optional[str] = None              # count (and time) the whole segmenter (zoo.models.segmenters)
    frozen_stages: Optional[int] = None          # no gradients for the stem and stages 1..K (with the three above)
    train: bool = False                          # count (and time) a training step
    optimizer: str = "sgd"                       # whose state the training memory counts
    # how timing runs
    latency_stat: str = "p50"
    device: str = "auto"
    threads: Optional[int] = None
    quick: bool = False
    iters: Optional[int] = None                  # at least this many timed steps (a p99 needs 100)
    min_seconds: Optional[float] = None          # at least this timed span
    backend: str = "eager"
    channels_last: bool = False
    compile: Optional[str] = None
    allow_noisy: bool = False                    # decide on noisy timings too (else: "undecided")
    wait_quiet: Optional[float] = None           # seconds to wait for a quiet machine before each timing
    budget_s: float = DEFAULT_BUDGET_S           # timing stops here; the answer so far is marked partial
    time_all: bool = False                       # time every candidate (else: stop once none can beat the best)
    predict: Optional[str] = None                # a datasheet device: roofline predictions instead of timing
    # output
    rank: str = "top1"
    out: Optional[str] = None                    # None: the user data folder (zoo.runs.data_dir)
    save: bool = True
    padded_from: Optional[str] = None            # set by check_query: the size asked for, when pad_to changed it

    @property
    def size(self) -> Size:
        """The size counted and timed: after check_query, --resolution padded by --pad-to."""
        return Size.of(self.resolution)

    def request(self, model: str, batch_size: int):
        """What `model` is counted as at `batch_size` under this query (zoo.runs.request): the classifier, its
        feature extractor, the whole detector (q.detector as that backbone means it) or segmenter."""
        from ..models.detectors.specs import resolve_detector
        from ..runs.request import Request

        detector = None if self.detector is None else resolve_detector(model, self.detector)
        return Request(model, self.size, batch_size, self.dtype, train=self.train, features=self.features,
                       frozen_stages=self.frozen_stages, detector=detector, segmenter=self.segmenter, optimizer=self.optimizer if self.train else None)

    @property
    def timing(self):
        """How this query's survivors are timed (zoo.runs.tasks.Timing)."""
        from ..runs.tasks import Timing

        return Timing(device=self.device, threads=self.threads, quick=self.quick, channels_last=self.channels_last,
                      compile=self.compile, backend=self.backend, iters=self.iters, min_seconds=self.min_seconds)

    @property
    def measured(self) -> bool:
        return (self.max_latency_ms is not None or self.min_imgs_per_s is not None
                or self.rank in ("latency", "imgs_per_s"))


def limit(text: str | float | None, flag: str) -> float | None:
    """A constraint's value: a finite, non-negative number (top-1 at most 100)."""
    if text is None:
        return None
    value = finite_number(text, flag)
    bound = LIMITS[flag.replace("-", "_")]
    if value < 0:
        raise UsageError(f"--{flag}: {text!r} must be a finite number >= 0")
    if bound is not None and value > bound:
        raise UsageError(f"--{flag}: {text!r} is above {bound:g}")
    return value


def batch_option(text: str | int, max_serve_mib: float | None) -> int | str:
    if str(text) == "auto":
        if max_serve_mib is None:
            raise UsageError("--batch-size auto: needs --max-serve-mib (the largest batch whose serving memory fits)")
        return "auto"
    return positive_int(str(text), "batch-size", MAX_BATCH)


def _check_detector(q: Query) -> None:
    """--detector: a known name, counted constraints only (timing a whole detector is not a select screen);
    --rank box_ap / mask_ap only with it."""
    if q.detector is None:
        if q.rank in TASK_RANKS:
            raise UsageError(f"--rank {q.rank}: the published COCO AP of a detector recipe: needs --detector")
        return
    from ..models.detectors.specs import DETECTOR_NAMES

    choice(q.detector, DETECTOR_NAMES, "detector")
    if q.measured:
        raise UsageError("--detector: counted constraints only (params, GMACs, memory); select does not time "
                         "whole detectors (no --max-latency-ms, --min-imgs-per-s, --rank latency/imgs_per_s)")


def detector_reason(model: str, q: Query) -> str | None:
    """Why `model` cannot carry q.detector: a detector needs maps at strides 4-32 (hierarchical backbones and
    ViTDet's simple pyramid), which a plain ViT/DeiT and a timm: model (not checked here) do not give."""
    spec = get_spec(model)
    if q.detector is None or spec.family == "vitdet":
        return None
    if model.startswith(TIMM_PREFIX) or spec.is_token_model:
        return f"--detector {q.detector}: gives one map, not maps at strides 4-32 (use vitdet_*)"
    return None


def stages_reason(model: str, q: Query) -> str | None:
    """Why `model` cannot have q.frozen_stages: it has blocks, not stages (as zoo.compare refuses it)."""
    if q.frozen_stages is None or model.startswith(TIMM_PREFIX) or not no_stages(model):
        return None
    return f"--frozen-stages: {NO_STAGES}"


def check_query(query: Query) -> Query:
    """Every option checked (one UsageError, before any work); returns the normalised query."""
    q = dataclasses.replace(query)
    q.models = model_names(q.models if isinstance(q.models, str) else ",".join(q.models or ["all"]))
    asked = one_size(q.resolution, "resolution")
    q.pad_to = None if q.pad_to is None else positive_int(str(q.pad_to), "pad-to", MAX_SIDE)
    padded = pad_size(asked, q.pad_to)
    q.resolution = padded.compact      # JSON-able: a side or (H, W)
    q.padded_from = asked.label if padded != asked else None
    for key in LIMITS:
        setattr(q, key, limit(getattr(q, key), key.replace("_", "-")))
    q.train = q.train or q.max_train_mib is not None
    q.pretraining = pretraining_option(q.pretraining)
    q.weights = weights_option(q.weights)
    q.batch_size = batch_option(q.batch_size, q.max_serve_mib)
    choice(q.rank, RANKS, "rank")
    _check_detector(q)
    q.frozen_stages = None if q.frozen_stages is None else frozen_stages_option(str(q.frozen_stages))
    if q.segmenter is not None:
        from ..models.segmenters.specs import SEGMENTERS

        choice(q.segmenter, tuple(SEGMENTERS), "segmenter")
    check_heads(q.features, q.frozen_stages, q.detector, q.segmenter)
    if q.rank.startswith("miou") and q.segmenter is None:
        raise UsageError(f"--rank {q.rank}: a segmenter's published ADE20K mIoU; needs --segmenter")
    choice(q.latency_stat, LATENCY_STATS, "latency-stat")
    choice(q.optimizer, OPTIMIZERS, "optimizer")
    check_dtype(q.dtype)
    timing = timing_of(q.timing, [q.backend], q.dtype, q.train)
    q.device, q.threads, q.iters, q.min_seconds = timing.device, timing.threads, timing.iters, timing.min_seconds
    check_memory_override()
    q.budget_s = positive_number(q.budget_s, "budget-s")
    if q.predict is not None:          # select() and zoo.select.predicted answer --predict, never this path
        raise UsageError("--predict: answered by zoo.select.predicted (select(..., predict=DEVICE))")
    if q.wait_quiet is not None:
        q.wait_quiet = finite_number(q.wait_quiet, "wait-quiet")
        if not 0 <= q.wait_quiet <= MAX_SECONDS:
            raise UsageError(f"--wait-quiet: {q.wait_quiet:g} must be between 0 and {MAX_SECONDS:,} seconds")
    q.out = out_or_default(q.out)
    if q.measured and q.save:
        q.out = str(check_out_dir(q.out))
    return q


def _accuracy(model: str, img_size: Size, groups: list[str] | None, weights: str) -> tuple[dict | None, str | None]:
    """(the checkpoint the row shows under --weights, chosen among --pretraining's groups; the reason the
    model is excluded by --pretraining, or None)."""
    entry = checkpoint_at(model, img_size, weights, groups)
    if groups is None or entry is not None:
        return entry, None
    has = checkpoint_groups(model)      # of the checkpoints timm can load, never of a card without weights
    if set(has) & set(groups):
        return None, None          # no accuracy at this size, but it has checkpoints of those groups
    taught = "".join(f"; {t}" for t in teacher_groups(model))          # where a teacher decided the group
    return None, (f"no {','.join(groups)} checkpoint (its checkpoints: {', '.join(has)}{taught})" if has else
                  f"no {','.join(groups)} checkpoint (timm has no evaluated checkpoint of it)")


def _row(model: str, img_size: Size, entry: dict | None, weights: str = "default", groups=None) -> dict:
    robust = entry if entry and entry["source"] == "timm" else (entry or {}).get("timm_eval") or entry or {}
    fields = entry_fields(entry)          # the names zoo.compare's rows give the same fields
    if entry is None:
        fields["pretraining"] = pretraining_of(model, None, weights, groups)
    return {"model": model, "img_size": img_size, "family": get_spec(model).family, **fields,
            "imagenet_v2": robust.get("imagenet_v2"), "sketch": robust.get("sketch"),
            "robustness_weights": robust.get("weights") if robust.get("imagenet_v2") is not None else None,
            "accuracy": accuracy_at(model, img_size)}


def size_reason(model: str, size: Size) -> str | None:
    """Why `model` cannot take `size` (its rule and the nearest sizes it would take), or None."""
    return get_spec(model).rule.refusal(size)


def _published(model: str, q: Query) -> tuple[dict | None, str | None]:
    """(the accuracy entry the row shows, None), or (None, the accuracy constraint it broke)."""
    size, groups = q.resolution, q.pretraining
    entry, reason = _accuracy(model, size, groups, q.weights)
    if reason:
        return None, reason
    if q.weights_available and not any(e["source"] == "timm" and e["img_size"] == size
                                       and (groups is None or e["pretraining"] in groups)
                                       for e in accuracy_entries(model)):
        return None, f"no timm weights evaluated at {q.size.label} px"
    if q.min_top1 is not None:
        if entry is None:
            return None, f"no top-1 known at {q.size.label} px"
        if entry["top1"] < q.min_top1:
            return None, f"top-1 {entry['top1']:g} < {q.min_top1:g} ({entry['source']}, {q.size.label} px)"
    return entry, None


def screen(model: str, q: Query) -> tuple[dict | None, str | None]:
    """(the accuracy entry the row shows, None), or (None, the first constraint it broke before counting): its
    size rule, then published accuracy."""
    reason = size_reason(model, q.size) or detector_reason(model, q) or stages_reason(model, q)
    return (None, reason) if reason else _published(model, q)


def screen_all(q: Query) -> tuple[list[dict], dict[str, dict | None]]:
    """(every model the size rule or the accuracy screen excludes, with why; {model: its published entry} of
    the rest), in the query's order."""
    excluded, published = [], {}
    for model in q.models:
        entry, reason = screen(model, q)
        if reason:
            excluded.append({"model": model, "img_size": q.resolution, "reason": reason})
        else:
            published[model] = entry
    return excluded, published


def count_screen(published: dict[str, dict | None], q: Query, excluded: list[dict]):
    """Count the models that passed `screen` (model -> its accuracy entry) on the scheduler; returns (the
    schedule, whose MACs timing takes; the rows within the counted budgets; the interrupt that stopped the
    counting, or None: the models counted by then are placed, the rest in neither). The others: `excluded`."""
    from .cost import count_candidates, counted_reason, counted_row

    counts, cost_rows, stop = count_candidates(list(published), q)
    candidates = []
    for model, entry in published.items():
        if model not in cost_rows:
            continue          # not counted: stopped before it
        row, failed = None, cost_rows[model].get("failed")     # a timm model that refuses the size, an error
        skipped = cost_rows[model].get("skipped")               # a count past the row schema's int64 bound
        if skipped:
            excluded.append({"model": model, "img_size": q.resolution, "reason": f"not counted: {skipped}"})
            continue
        if not failed:
            try:
                row = {**_row(model, q.resolution, entry, q.weights, q.pretraining),
                       **counted_row(model, q, cost_rows[model])}
            except KeyboardInterrupt as e:     # inside --batch-size auto's larger counts: the rest uncounted
                return counts, candidates, e.with_traceback(None)
            except Exception as e:  # noqa: BLE001 - a failed count at --batch-size auto's larger batches
                failed = one_line(e)
        reason = f"counting failed: {failed}" if failed else counted_reason(row, q)
        if reason:
            excluded.append({"model": model, "img_size": q.resolution, "reason": reason})
        else:
            candidates.append(row)
    return counts, candidates, stop


def _describe(q: Query, rank: str, note: str | None, axes: tuple) -> dict:
    x, y, lower = axes
    query = {k: getattr(q, k) for k in ("resolution", "padded_from", "batch_size", "dtype", "features", "detector",
                                        "train", "optimizer", "device", "threads", "quick", "iters", "min_seconds", "backend",
                                        "channels_last", "compile", "allow_noisy", "latency_stat", "pretraining",
                                        "weights", "weights_available", "budget_s", "time_all", "predict")}
    for axis in ("segmenter", "frozen_stages"):   # only when asked: stored answers to other questions keep their keys
        if getattr(q, axis) is not None:
            query[axis] = getattr(q, axis)
    query.update({"rank": rank, "rank_asked": q.rank, "rank_note": note, "models": q.models,
                  "constraints": {k: getattr(q, k) for k in LIMITS if getattr(q, k) is not None},
                  "pareto_axes": {"x": x, "y": y, "lower_x_is_better": lower}})
    return query


def select(models: Union[Query, list, str, None] = None, resolution: Union[Size, str] = 224, *, timing=None,
           **options) -> dict:
    """What `python -m zoo.select` prints as JSON: {"query", "shortlist", "excluded", "undecided", "pareto"},
    and for a measured (or interrupted) question also "untimed" and "timing" (counts, partial or None).
    Takes a Query, or its fields (`select(["deit_ti"], 384, max_gmacs=20)`). Raises UsageError for bad
    options before any work. timing: a zoo.select.timing.Timing (tests hand in a fake timer)."""
    started = time.monotonic()          # the budget counts from here: counting and the peak probe spend it too
    query = models if isinstance(models, Query) else Query(models, resolution, **options)
    if query.predict is not None:       # a GPU not at hand: the command line's one --predict path
        from .predicted import answer, from_query

        return answer(from_query(query))
    q = check_query(query)
    excluded, undecided, candidates, summary, where = [], [], [], None, "while counting"
    try:        # an interrupt in the screens, the counts or before the timing loop: what is decided stays
        screened, published = screen_all(q)
        excluded += screened
        counts, candidates, stop = count_screen(published, q, excluded)
        if stop is None and q.measured:
            from .timing import time_candidates

            candidates = rank_screen(candidates, q, excluded)
            order = q.rank if q.rank in MEASURED_RANKS else effective_rank(candidates, q)[0]
            candidates.sort(key=timing_key(order, q.latency_stat))
            spent, where = time.monotonic() - started if timing is None else 0.0, "before timing"   # a fake: its clock
            candidates, summary = time_candidates(candidates, q, excluded, undecided, counts, timing, order, spent)
    except KeyboardInterrupt as e:
        stop = e.with_traceback(None)       # NB: not its frames (a suspended counting pool among them)
    if stop is not None:
        from .stopped import cut_short

        candidates, summary = cut_short(stop, q, (excluded, undecided), candidates, time.monotonic() - started, where)
    defer("zoo.select")       # settled: a signal from here on is kept, the answer finished, kept and printed
    rank, note = effective_rank(candidates, q)
    candidates.sort(key=_rank_key(rank, q.latency_stat))
    if rank == "latency":
        _versus_next(candidates)
    axes = pareto_axes(rank, q.latency_stat)
    # the front's groups: the classifier checkpoint's pretraining, or for mIoU the segmentation recipe's
    groups = [r.get("miou_pretraining") if rank.startswith("miou") else r["pretraining"] for r in candidates]
    front = pareto_front([{**r, "pretraining": g} for r, g in zip(candidates, groups)], *axes)
    pareto: dict[str, list[str]] = {}
    for i, row in enumerate(candidates):
        row["pareto"] = i in front
        row.pop("macs")
        row.pop("work")
        if i in front:
            pareto.setdefault(groups[i] or "unknown", []).append(row["model"])
    order = {m: i for i, m in enumerate(q.models)}
    excluded.sort(key=lambda e: order.get(e["model"], len(order)))
    result = {"query": _describe(q, rank, note, axes), "shortlist": candidates, "excluded": excluded,
              "undecided": undecided, "pareto": pareto}
    if summary is not None:
        result["untimed"] = summary.pop("untimed")
        result["timing"] = summary
    return result
