"""`python -m zoo.select`: the backbones that fit a budget at one resolution, ranked, with the Pareto front per
pretraining group, and every other model excluded with the first constraint it broke and by how much.

Constraints are applied in this order: the model's size rule; published accuracy (--pretraining,
--weights-available, --min-top1); counted cost on the meta device (--max-params, --max-gmacs,
--max-act-mib, --max-serve-mib); then measured speed (--max-latency-ms, --min-imgs-per-s), timing only the
survivors, cheapest (GMACs) first, and reusing rows under <out>/results/ that `zoo.compare --resume` would
reuse (same key). Measured rows are appended there unless --no-save.

exit status: 0 a selection was printed (the shortlist may be empty); 2 bad input (one line on stderr,
nothing written); 130 interrupted (timed rows finished before it are kept).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys

from .errors import UsageError, ZooError
from .models.accuracy import accuracy_entries, pareto_front, pretraining_of, top1_at
from .models.cards import PRETRAINING
from .models.registry import get_spec
from .runs.plan import (MAX_BATCH, MAX_SIDE, check_device, check_dtype, check_out_dir, check_threads, choice,
                        model_names, positive_int, split_list)

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
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--{flag}: {text!r} is not a number") from None
    bound = LIMITS[flag.replace("-", "_")]
    if not math.isfinite(value) or value < 0:
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
    q["resolution"] = positive_int(str(q["resolution"]), "resolution", MAX_SIDE)
    for key in LIMITS:
        q[key] = limit(q.get(key), key.replace("_", "-"))
    q["pretraining"] = pretraining_groups(q.get("pretraining"))
    q["batch_size"] = batch_option(q.get("batch_size", 1), q["max_serve_mib"])
    choice(q["rank"], RANKS, "rank")
    choice(q["latency_stat"], LATENCY_STATS, "latency-stat")
    check_dtype(q["dtype"])
    check_device(q["device"])
    if q.get("threads") is not None:
        q["threads"] = check_threads(str(q["threads"]))
    return q


def _count(model: str, img_size: int, batch: int, dtype: str) -> dict:
    from .runs.tasks import count

    c = count(model, img_size, batch_size=batch, dtype=dtype, train=False)
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


def _accuracy(model: str, img_size: int, groups: list[str] | None) -> tuple[dict | None, str | None]:
    """(the entry the row shows, the reason it is excluded by --pretraining or None)."""
    entry = top1_at(model, img_size, groups)
    if groups is None or entry is not None:
        return entry, None
    shown = top1_at(model, img_size)
    group = shown["pretraining"] if shown else pretraining_of(model)
    if shown is None and group in groups:
        return None, None          # no accuracy at this size, but the weights it stands for are of that group
    return None, f"pretraining {group or 'unknown'} not in {','.join(groups)}"


def _row(model: str, img_size: int, entry: dict | None) -> dict:
    robust = entry if entry and entry["source"] == "timm" else (entry or {}).get("timm_eval") or entry or {}
    return {"model": model, "img_size": img_size, "family": get_spec(model).family,
            "top1": entry["top1"] if entry else None, "top1_img_size": entry["img_size"] if entry else None,
            "top1_source": entry["source"] if entry else None, "top1_citation": entry["citation"] if entry else None,
            "top1_weights": entry["weights"] if entry else None,
            "pretraining": entry["pretraining"] if entry else pretraining_of(model),
            "imagenet_v2": robust.get("imagenet_v2"), "sketch": robust.get("sketch"),
            "robustness_weights": robust.get("weights") if robust.get("imagenet_v2") is not None else None}


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
            task = Task("throughput", row["model"], row["img_size"], row["batch_size"], q["dtype"],
                        device=q["device"], threads=q["threads"], quick=q["quick"])
            timed = previous.get(task_key(task))
            row["timing"] = "reused" if timed else "measured"
            if timed is None:
                log.info("timing %s at %d px, batch %d", row["model"], row["img_size"], row["batch_size"])
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
    if not spec.rule.accepts(size):
        return None, f"cannot take {size} px: the side must be {spec.rule.describe()}"
    entry, reason = _accuracy(model, size, groups)
    if reason:
        return None, reason
    if q["weights_available"] and not any(e["source"] == "timm" and e["img_size"] == size
                                          and (groups is None or e["pretraining"] in groups)
                                          for e in accuracy_entries(model)):
        return None, f"no timm weights evaluated at {size} px"
    if q["min_top1"] is not None:
        if entry is None:
            return None, f"no top-1 known at {size} px"
        if entry["top1"] < q["min_top1"]:
            return None, f"top-1 {entry['top1']:g} < {q['min_top1']:g} ({entry['source']}, {size} px)"
    auto = q["batch_size"] == "auto"
    try:
        batch = 1 if auto else q["batch_size"]
        counted = _count(model, size, batch, q["dtype"])
        if auto and _serve_mib(counted) <= q["max_serve_mib"]:
            batch, counted = _auto_batch(model, size, q["dtype"], q["max_serve_mib"], counted)
    except Exception as e:  # noqa: BLE001 - a timm model that refuses the size, a counting failure
        return None, f"counting failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
    row = {**_row(model, size, entry), "batch_size": batch, "params_m": counted["params"] / 1e6,
           "gmacs": counted["macs"] / 1e9, "macs": counted["macs"], "act_mib": counted["act_peak_bytes"] / MIB,
           "weight_mib": counted["weight_bytes"] / MIB, "serve_mib": _serve_mib(counted)}
    reason = _counted_reason(row, q)
    return (None, reason) if reason else (row, None)


def select(models: list[str] | str | None = None, resolution: int = 224, *, max_gmacs=None, max_params=None,
           max_act_mib=None, max_serve_mib=None, min_top1=None, pretraining=None, weights_available=False,
           max_latency_ms=None, latency_stat="p50", min_imgs_per_s=None, device="auto", dtype="fp32",
           batch_size: int | str = 1, threads=None, quick=False, out=".", save=True, rank="top1") -> dict:
    """What `python -m zoo.select` prints as JSON: {"query", "shortlist", "excluded", "pareto"}.

    models: names, wildcards, timm:<name> (default: the registry). max_params is in millions, MiB are 2**20
    bytes, latencies are per batch. Raises UsageError for bad options before any work.
    """
    names = model_names(models if isinstance(models, str) else ",".join(models or ["all"]))
    q = check_query(dict(
        resolution=resolution, max_gmacs=max_gmacs, max_params=max_params, max_act_mib=max_act_mib,
        max_serve_mib=max_serve_mib, min_top1=min_top1, pretraining=pretraining, weights_available=weights_available,
        max_latency_ms=max_latency_ms, latency_stat=latency_stat, min_imgs_per_s=min_imgs_per_s, device=device,
        dtype=dtype, batch_size=batch_size, threads=threads, quick=quick, out=out, save=save, rank=rank))
    measured = q["max_latency_ms"] is not None or q["min_imgs_per_s"] is not None or rank in ("latency", "imgs_per_s")
    if measured and save:
        q["out"] = str(check_out_dir(out))
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
                               "latency_stat", "pretraining", "weights_available")}
    query.update({"models": names, "constraints": {k: q[k] for k in LIMITS if q[k] is not None},
                  "pareto_axes": {"x": x, "y": y, "lower_x_is_better": lower}})
    return {"query": query, "shortlist": candidates, "excluded": excluded, "pareto": pareto}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, not argparse's usage dump
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m zoo.select", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resolution", default="224", help="input side (default 224)")
    p.add_argument("--models", default="all", help="comma list: names, wildcards (swin_*), timm:<name> "
                                                   "(default: the whole registry)")
    p.add_argument("--max-gmacs", help="GMACs per image")
    p.add_argument("--max-params", help="parameters, millions")
    p.add_argument("--max-act-mib", help="activation peak of one forward at the batch, MiB")
    p.add_argument("--max-serve-mib", help="weights at --dtype + activation peak at the batch, MiB")
    p.add_argument("--min-top1", help="ImageNet-1k top-1 (%%) published at this resolution")
    p.add_argument("--pretraining", help=f"comma list of {', '.join(PRETRAINING)}")
    p.add_argument("--weights-available", action="store_true",
                   help="only models with timm weights evaluated at this resolution (packaged table)")
    p.add_argument("--max-latency-ms", help="measured latency of one batch (see --latency-stat)")
    p.add_argument("--latency-stat", default="p50", help="p50 (default) or p99")
    p.add_argument("--min-imgs-per-s", help="measured images per second")
    p.add_argument("--device", default="auto", help="for timing: auto, cpu, cuda (default auto)")
    p.add_argument("--dtype", default="fp32", help="fp32, bf16, fp16 (counting and timing; default fp32)")
    p.add_argument("--batch-size", default="1", help="a batch, or auto with --max-serve-mib: the largest that "
                                                     "fits (default 1)")
    p.add_argument("--threads", help="CPU threads for timing (default: all available cores)")
    p.add_argument("--quick", action="store_true", help="short timing runs")
    p.add_argument("--rank", default="top1", help=f"{', '.join(RANKS)} (default top1)")
    p.add_argument("--format", default="table", help=f"{', '.join(FORMATS)} (default table)")
    p.add_argument("--out", default=".", help="folder whose results/ timed rows are reused from and appended to")
    p.add_argument("--no-save", action="store_true", help="write nothing (stored rows are still reused)")
    return p


def _cells(row: dict, timed: bool) -> list:
    top1 = None if row["top1"] is None else f"{row['top1']:g} @{row['top1_img_size']} ({row['top1_source']})"
    cells = [row["model"] + (" *" if row["pareto"] else ""), row["img_size"], row["batch_size"], num(row["params_m"]),
             num(row["gmacs"]), num(row["act_mib"]), num(row["serve_mib"])]
    if timed:
        cells += [None if row.get(k) is None else num(row[k]) for k in ("latency_ms_p50", "latency_ms_p99",
                                                                         "imgs_per_s")]
    return cells + [top1, row["pretraining"], None if row["imagenet_v2"] is None else f"{row['imagenet_v2']:g}",
                    None if row["sketch"] is None else f"{row['sketch']:g}"]


def render(result: dict, fmt: str) -> str:
    """The selection as markdown, or as a plain-text table (JSON is json.dumps of `result`)."""
    from .markdown import markdown_table

    timed = any("latency_ms_p50" in r for r in result["shortlist"])
    headers = ["model", "res", "batch", "params (M)", "GMACs", "act (MiB)", "serve (MiB)"]
    headers += ["p50 (ms)", "p99 (ms)", "img/s"] if timed else []
    headers += ["top-1 @res (source)", "pretraining", "IN-V2", "Sketch"]
    rows = [_cells(r, timed) for r in result["shortlist"]]
    axes, query = result["query"]["pareto_axes"], result["query"]
    title = (f"shortlist at {query['resolution']} px, ranked by {query['rank']}: {len(rows)} of "
             f"{len(query['models'])} (* on the Pareto front of {axes['y']} vs {axes['x']} in its pretraining group)")
    if fmt == "markdown":
        table = markdown_table(headers, rows).rstrip("\n")
    else:
        from rich.console import Console
        from rich.table import Table

        grid = Table(show_edge=False, pad_edge=False)
        for h in headers:
            grid.add_column(h, justify="left" if h in ("model", "top-1 @res (source)", "pretraining") else "right")
        for r in rows:
            grid.add_row(*("-" if c is None else str(c) for c in r))
        console = Console(width=200, record=True, file=open(os.devnull, "w"))
        console.print(grid)
        table = console.export_text().rstrip("\n")
    lines = [title, "", table, "", "Pareto front per pretraining group:"]
    lines += [f"- {group}: {', '.join(models)}" for group, models in result["pareto"].items()] or ["- (none)"]
    lines += ["", f"excluded ({len(result['excluded'])}):"]
    lines += [f"- {e['model']}: {e['reason']}" for e in result["excluded"]] or ["- (none)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
        choice(args.format, FORMATS, "format")
        result = select(args.models, args.resolution, max_gmacs=args.max_gmacs, max_params=args.max_params,
                        max_act_mib=args.max_act_mib, max_serve_mib=args.max_serve_mib, min_top1=args.min_top1,
                        pretraining=args.pretraining, weights_available=args.weights_available,
                        max_latency_ms=args.max_latency_ms, latency_stat=args.latency_stat,
                        min_imgs_per_s=args.min_imgs_per_s, device=args.device, dtype=args.dtype,
                        batch_size=args.batch_size, threads=args.threads, quick=args.quick, out=args.out,
                        save=not args.no_save, rank=args.rank)
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zoo.select: interrupted; timed rows finished before it are kept", file=sys.stderr)
        return 130
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        sys.stdout.write(render(result, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
