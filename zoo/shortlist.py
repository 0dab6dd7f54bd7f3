"""The selection behind `python -m zoo.select`: candidates screened by size rule, published accuracy,
counted cost and measured speed (in that order), ranked, with Pareto fronts and reasons for every exclusion."""
from __future__ import annotations

import contextlib
import logging

from .errors import UsageError
from .models.accuracy import (accuracy_at, accuracy_entries, checkpoint_at, pareto_front,
                              pretraining_of, short_weights, weights_option)
from .models.accuracy import pretraining_groups as checkpoint_groups
from .models.cards import PRETRAINING
from .models.registry import get_spec
from .models.spec import Size
from .runs.parallel import prefetch
from .runs.plan import (MAX_BATCH, check_device, check_dtype, check_out_dir, check_threads, choice, finite_number,
                        model_names, positive_int, sizes, split_list)

log = logging.getLogger("zoo.select")
FORMATS = ("table", "markdown", "json")
RANKS = ("top1", "imagenet_v2", "gmacs", "latency", "imgs_per_s")
LATENCY_STATS = ("p50", "p99")
MIB = 2 ** 20
# numeric constraints (all >= 0) -> their upper bound, if any
LIMITS = {"max_gmacs": None, "max_params": None, "max_act_mib": None, "max_serve_mib": None, "min_top1": 100.0,
          "max_latency_ms": None, "min_imgs_per_s": None}


def num(value: float) -> str:
    """Three significant figures or so: 243, 47.2, 5.79, 0.012."""
    a = abs(value)
    return f"{value:,.0f}" if a >= 100 else f"{value:.1f}" if a >= 10 else f"{value:.2f}" if a >= 0.1 else f"{value:.3g}"


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


def pretraining_groups(text: str | list[str] | None) -> list[str] | None:
    if text is None:
        return None
    items = split_list(text, "pretraining") if isinstance(text, str) else list(text)
    for item in items:
        if item not in PRETRAINING:
            raise UsageError(f"--pretraining: unknown group {item!r}; expected some of {', '.join(PRETRAINING)}")
    return list(dict.fromkeys(items))


def batch_option(text: str | int, max_serve_mib: float | None) -> int | str:
    if str(text) == "auto":
        if max_serve_mib is None:
            raise UsageError("--batch-size auto: needs --max-serve-mib (the largest batch whose serving memory fits)")
        return "auto"
    return positive_int(str(text), "batch-size", MAX_BATCH)


def check_query(q: dict) -> dict:
    """Every option checked (one UsageError, before any work); returns the normalised query."""
    q = dict(q)
    res = q["resolution"]    # the API takes (H, W) too
    text = "x".join(map(str, res)) if isinstance(res, (tuple, list)) else str(getattr(res, "label", res))
    if "," in text or not text.strip():
        raise UsageError(f"--resolution: one side or HEIGHTxWIDTH (800x1344), not a list ({text!r})")
    q["resolution"] = sizes(text, "resolution")[0].compact   # JSON-able: a side or (H, W)
    for key in LIMITS:
        q[key] = limit(q.get(key), key.replace("_", "-"))
    q["pretraining"] = pretraining_groups(q.get("pretraining"))
    q["weights"] = weights_option(q.get("weights"))
    q["batch_size"] = batch_option(q.get("batch_size", 1), q["max_serve_mib"])
    choice(q["rank"], RANKS, "rank")
    choice(q["latency_stat"], LATENCY_STATS, "latency-stat")
    check_dtype(q["dtype"])
    q["device"] = check_device(q["device"])
    if q.get("threads") is not None:
        q["threads"] = check_threads(str(q["threads"]))
    return q


def _count(model: str, img_size: int, batch: int, dtype: str) -> dict:
    from .runs.counted import counted

    c = counted(model, Size.of(img_size), batch_size=batch, dtype=dtype, train=False)
    return {k: c[k] for k in ("params", "macs", "act_peak_bytes", "weight_bytes")}


def _serve_mib(c: dict) -> float:
    return (c["weight_bytes"] + c["act_peak_bytes"]) / MIB


def _auto_batch(model: str, img_size: int, dtype: str, budget_mib: float, first: dict) -> tuple[int, dict]:
    """The largest batch whose weights + activation peak fit `budget_mib` (counted on meta), with its count;
    `first` is the batch-1 count, which fits."""
    counts = {1: first}

    def fits(b: int) -> bool:
        if b not in counts:
            counts[b] = _count(model, img_size, b, dtype)
        return _serve_mib(counts[b]) <= budget_mib

    per_image = max(first["act_peak_bytes"], 1) / MIB
    guess = int(max(1, min(MAX_BATCH, (budget_mib - first["weight_bytes"] / MIB) // per_image)))
    lo, hi = 1, guess
    if fits(guess):
        lo, step = guess, min(guess * 2, MAX_BATCH)
        while lo < MAX_BATCH and fits(step):
            lo, step = step, min(step * 2, MAX_BATCH)
        hi = step if lo < MAX_BATCH else None
    while hi is not None and hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, counts[lo]


def _accuracy(model: str, img_size: int, groups: list[str] | None, weights: str) -> tuple[dict | None, str | None]:
    """(the checkpoint the row shows under --weights, chosen among --pretraining's groups; the reason the
    model is excluded by --pretraining, or None)."""
    entry = checkpoint_at(model, img_size, weights, groups)
    if groups is None or entry is not None:
        return entry, None
    has = checkpoint_groups(model) or [pretraining_of(model)]
    if set(has) & set(groups):
        return None, None          # no accuracy at this size, but it has checkpoints of those groups
    return None, f"no {','.join(groups)} checkpoint (its checkpoints: {', '.join(g or 'unknown' for g in has)})"


def _row(model: str, img_size: int, entry: dict | None, weights: str = "default", groups=None) -> dict:
    robust = entry if entry and entry["source"] == "timm" else (entry or {}).get("timm_eval") or entry or {}
    return {"model": model, "img_size": img_size, "family": get_spec(model).family,
            "top1": entry["top1"] if entry else None, "top1_img_size": entry["img_size"] if entry else None,
            "top1_source": entry["source"] if entry else None, "top1_citation": entry["citation"] if entry else None,
            "top1_weights": entry["weights"] if entry else None,
            "weights_short": short_weights(entry["weights"]) if entry else None,
            "weights_policy": entry["policy"] if entry else None,
            "pretraining": entry["pretraining"] if entry else pretraining_of(model, None, weights, groups),
            "imagenet_v2": robust.get("imagenet_v2"), "sketch": robust.get("sketch"),
            "robustness_weights": robust.get("weights") if robust.get("imagenet_v2") is not None else None,
            "accuracy": accuracy_at(model, img_size)}


def _counted_reason(row: dict, q: dict) -> str | None:
    checks = [("max_params", row["params_m"], "params {v} M > {lim} M"),
              ("max_gmacs", row["gmacs"], "{v} GMACs > {lim}"),
              ("max_act_mib", row["act_mib"], "activation peak {v} MiB > {lim} MiB{b}"),
              ("max_serve_mib", row["serve_mib"], "serving memory {v} MiB > {lim} MiB{b} (weights {w} "
                                                  "MiB + activations {a} MiB)")]
    for key, value, text in checks:
        if q[key] is not None and value > q[key]:
            return text.format(v=num(value), lim=f"{q[key]:g}", b=_at_batch(row), w=num(row["weight_mib"]),
                               a=num(row["act_mib"]))
    return None


def _at_batch(row: dict) -> str:
    return "" if row["batch_size"] == 1 else f" at batch {row['batch_size']}"


def _measured_reason(row: dict, q: dict) -> str | None:
    stat = q["latency_stat"]
    latency = row.get(f"latency_ms_{stat}")
    if latency is None and (q["max_latency_ms"] is not None or q["rank"] == "latency"):   # a stored row without it
        return f"no latency {stat} in its timed row{_at_batch(row)}"
    if q["max_latency_ms"] is not None and latency > q["max_latency_ms"]:
        return f"latency {stat} {num(latency)} ms > {q['max_latency_ms']:g} ms{_at_batch(row)}"
    if q["min_imgs_per_s"] is not None and row["imgs_per_s"] < q["min_imgs_per_s"]:
        return f"{num(row['imgs_per_s'])} img/s < {q['min_imgs_per_s']:g} img/s{_at_batch(row)}"
    return None


def _time(rows: list[dict], q: dict, excluded: list[dict]) -> list[dict]:
    """Time `rows` cheapest first (reusing stored rows with the --resume key); returns those that pass."""
    from .runs.peaks import PeakCache
    from .runs.schema import is_measured, row_key
    from .runs.store import ResultStore
    from .runs.tasks import Task, run_task, task_key

    store = ResultStore(q["out"])
    previous = ({row_key(r): r for r in store.rows("throughput") if is_measured(r)}
                if store.path("throughput").is_file() else {})
    kept = []
    with store.locked() if q["save"] else contextlib.nullcontext():
        peaks = PeakCache(store.dir if q["save"] else None)
        for row in sorted(rows, key=lambda r: (r["gmacs"], r["model"])):
            task = Task("throughput", row["model"], Size.of(row["img_size"]), row["batch_size"], q["dtype"],
                        device=q["device"], threads=q["threads"], quick=q["quick"])
            timed = previous.get(task_key(task))
            row["timing"] = "reused" if timed else "measured"
            if timed is None:
                log.info("timing %s at %s px, batch %d", row["model"], Size.of(row["img_size"]).label, row["batch_size"])
                timed = run_task(task, macs=row["macs"], peak=peaks.get(task))
                if q["save"]:
                    store.append(timed)
            if timed.get("failed"):
                excluded.append({"model": row["model"], "img_size": row["img_size"],
                                 "reason": f"timing failed: {timed['failed']}"})
                continue
            row.update({k: timed.get(k) for k in ("latency_ms_p50", "latency_ms_p99", "imgs_per_s", "ran_batch_size")})
            reason = _measured_reason(row, q)
            if reason:
                excluded.append({"model": row["model"], "img_size": row["img_size"], "reason": reason})
            else:
                kept.append(row)
    return kept


def _rank_key(rank: str, stat: str):
    field, higher = {"top1": ("top1", True), "imagenet_v2": ("imagenet_v2", True), "gmacs": ("gmacs", False),
                     "latency": (f"latency_ms_{stat}", False), "imgs_per_s": ("imgs_per_s", True)}[rank]
    return lambda r: (r.get(field) is None, -(r.get(field) or 0) if higher else (r.get(field) or 0), r["model"])


def pareto_axes(rank: str, stat: str) -> tuple[str, str, bool]:
    """(x, y, lower x is better) of the front the output shows; it follows --rank's axis."""
    if rank == "latency":
        return f"latency_ms_{stat}", "top1", True
    if rank == "imgs_per_s":
        return "imgs_per_s", "top1", False
    return "gmacs", "imagenet_v2" if rank == "imagenet_v2" else "top1", True


def _screen(model: str, q: dict) -> tuple[dict | None, str | None]:
    """(the model's counted row, None), or (None, the first constraint it broke), in the module's order."""
    size, groups = q["resolution"], q["pretraining"]
    spec = get_spec(model)
    if not spec.rule.accepts(Size.of(size)):
        sides = "the side" if isinstance(size, int) else "each side"
        return None, f"cannot take {Size.of(size).label} px: {sides} must be {spec.rule.describe()}"
    entry, reason = _accuracy(model, size, groups, q["weights"])
    if reason:
        return None, reason
    if q["weights_available"] and not any(e["source"] == "timm" and e["img_size"] == size
                                          and (groups is None or e["pretraining"] in groups)
                                          for e in accuracy_entries(model)):
        return None, f"no timm weights evaluated at {Size.of(size).label} px"
    if q["min_top1"] is not None:
        if entry is None:
            return None, f"no top-1 known at {Size.of(size).label} px"
        if entry["top1"] < q["min_top1"]:
            return None, f"top-1 {entry['top1']:g} < {q['min_top1']:g} ({entry['source']}, {Size.of(size).label} px)"
    auto = q["batch_size"] == "auto"
    try:
        batch = 1 if auto else q["batch_size"]
        counted = _count(model, size, batch, q["dtype"])
        if auto and _serve_mib(counted) <= q["max_serve_mib"]:
            batch, counted = _auto_batch(model, size, q["dtype"], q["max_serve_mib"], counted)
    except Exception as e:  # noqa: BLE001 - a timm model that refuses the size, a counting failure
        return None, f"counting failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
    row = {**_row(model, size, entry, q["weights"], groups), "batch_size": batch, "params_m": counted["params"] / 1e6,
           "gmacs": counted["macs"] / 1e9, "macs": counted["macs"], "act_mib": counted["act_peak_bytes"] / MIB,
           "weight_mib": counted["weight_bytes"] / MIB, "serve_mib": _serve_mib(counted)}
    reason = _counted_reason(row, q)
    return (None, reason) if reason else (row, None)


def select(models: list[str] | str | None = None, resolution: int = 224, *, max_gmacs=None, max_params=None,
           max_act_mib=None, max_serve_mib=None, min_top1=None, pretraining=None, weights_available=False,
           max_latency_ms=None, latency_stat="p50", min_imgs_per_s=None, device="auto", dtype="fp32",
           batch_size: int | str = 1, threads=None, quick=False, out=".", save=True, rank="top1",
           weights="default") -> dict:
    """What `python -m zoo.select` prints as JSON: {"query", "shortlist", "excluded", "pareto"}.

    models: names, wildcards, timm:<name> (default: the registry). max_params is in millions, MiB are 2**20
    bytes, latencies are per batch. Raises UsageError for bad options before any work.
    """
    names = model_names(models if isinstance(models, str) else ",".join(models or ["all"]))
    q = check_query(dict(
        resolution=resolution, max_gmacs=max_gmacs, max_params=max_params, max_act_mib=max_act_mib,
        max_serve_mib=max_serve_mib, min_top1=min_top1, pretraining=pretraining, weights_available=weights_available,
        max_latency_ms=max_latency_ms, latency_stat=latency_stat, min_imgs_per_s=min_imgs_per_s, device=device,
        dtype=dtype, batch_size=batch_size, threads=threads, quick=quick, out=out, save=save, rank=rank,
        weights=weights))
    measured = q["max_latency_ms"] is not None or q["min_imgs_per_s"] is not None or rank in ("latency", "imgs_per_s")
    if measured and save:
        q["out"] = str(check_out_dir(out))
    first_batch = 1 if q["batch_size"] == "auto" else q["batch_size"]
    prefetch([(m, q["resolution"], first_batch, q["dtype"]) for m in names   # on all cores, into the cache
              if get_spec(m).rule.accepts(Size.of(q["resolution"]))])
    excluded, candidates = [], []
    for model in names:
        row, reason = _screen(model, q)
        if reason:
            excluded.append({"model": model, "img_size": q["resolution"], "reason": reason})
        else:
            candidates.append(row)
    if measured and candidates:
        candidates = _time(candidates, q, excluded)
    candidates.sort(key=_rank_key(rank, latency_stat))
    x, y, lower = pareto_axes(rank, latency_stat)
    front = pareto_front(candidates, x, y, lower)
    pareto: dict[str, list[str]] = {}
    for i, row in enumerate(candidates):
        row["pareto"] = i in front
        row.pop("macs")
        if i in front:
            pareto.setdefault(row["pretraining"] or "unknown", []).append(row["model"])
    order = {m: i for i, m in enumerate(names)}
    excluded.sort(key=lambda e: order[e["model"]])
    query = {k: q[k] for k in ("resolution", "batch_size", "dtype", "device", "threads", "quick", "rank",
                               "latency_stat", "pretraining", "weights", "weights_available")}
    query.update({"models": names, "constraints": {k: q[k] for k in LIMITS if q[k] is not None},
                  "pareto_axes": {"x": x, "y": y, "lower_x_is_better": lower}})
    return {"query": query, "shortlist": candidates, "excluded": excluded, "pareto": pareto}
