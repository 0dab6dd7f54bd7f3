"""`python -m zoo.select --predict DEVICE ...`: the backbones that meet a throughput or latency budget on a GPU
that is not here, by archzoo's calibrated prediction (zoo.predict.inference.predict), ranked; every figure is
marked predicted. Models that miss a constraint are listed with the first one they broke.

Kept apart from zoo.select's measured path: nothing is timed or written; counting is on meta. The one
--predict path: the command line and `zoo.select.select(..., predict=DEVICE)` both answer through
`predicted_select`.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Optional, Union

from analysis.size import Size

from ..answers.text import predicted_text
from ..errors import UsageError, UsageParser, ZooError
from ..options import add_options
from ..options.predicted import RANKS
from ..options.values import choice
from ..runs.request import Request

GIB = 1024 ** 3


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.select --predict", description=__doc__.splitlines()[0])
    p.add_argument("--predict", metavar="DEVICE[,DEVICE...]", required=True,
                   help="datasheet devices (zoo.compare --predict); several: each one's shortlist, then per model the "
                        "device that wins on --rank and whether the band separates it")
    p.add_argument("--models", default="all")
    p.add_argument("--resolution", default="224")
    p.add_argument("--dtype", default="bf16", help="fp32, bf16, fp16 (bf16/fp16: torch.autocast; default bf16)")
    p.add_argument("--batch-size", default="1", help="images per batch, or 'best': per model and device the best "
                                                    "batch within --max-latency-ms (default 1)")
    p.add_argument("--max-latency-ms", help="predicted ms per batch (the calibrated expectation)")
    p.add_argument("--min-imgs-per-s", help="predicted images per second (the calibrated expectation)")
    p.add_argument("--price-per-hour", metavar="USD|DEVICE=USD,...", help="each device's price per hour, which you "
                                                                       "give (L4=0.8,A100=2.5): adds images per dollar")
    p.add_argument("--rank", default="imgs_per_s", help=f"{', '.join(RANKS)} (default imgs_per_s)")
    p.add_argument("--format", default="table", help="table or json")
    from ..options import add_options

    add_options(p, "--reparam", "--tf32", "--out", "--no-save", no_save=dict(help="write nothing (the predicted rows are otherwise appended "
                                                           "to <out>/results/predicted.jsonl)"))
    return p


def screen(row: dict, max_latency_ms: float | None, min_imgs_per_s: float | None) -> str | None:
    """The first constraint the predicted row breaks, or None."""
    if not row["fits_memory"]:
        return f"serving memory {row['serve_bytes'] / GIB:.1f} GiB > the device's {row['device_memory_bytes'] / 1e9:g} GB"
    if max_latency_ms is not None and row["latency_ms"] > max_latency_ms:
        return f"predicted {row['latency_ms']:.3g} ms / batch > {max_latency_ms:g}"
    if min_imgs_per_s is not None and row["imgs_per_s"] < min_imgs_per_s:
        return f"predicted {row['imgs_per_s']:.4g} img/s < {min_imgs_per_s:g}"
    return None


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        choice(args.format, ("table", "json"), "format")
        asked = Predicted(args.predict, args.models, args.resolution, args.dtype, args.batch_size,
                          args.max_latency_ms, args.min_imgs_per_s, args.rank, args.price_per_hour, args.out,
                          not args.no_save, args.reparam, args.tf32)
        result = answer(asked)
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    elif "per_device" in result:
        from ..predict.text import decision_markdown

        for one in result["per_device"].values():
            sys.stdout.write(predicted_text(one["shortlist"], one["excluded"], args.rank) + "\n")
        if result["decisions"]:
            query = result["query"]
            sys.stdout.write(decision_markdown(result["decisions"],
                                               query["max_latency_ms"] if query["batch_size"] == "best" else None))
    else:
        sys.stdout.write(predicted_text(result["shortlist"], result["excluded"], args.rank))
    return 0


def answer(asked: Predicted) -> dict:
    """predicted_select for one device, across_devices for several; with asked.save each predicted row is appended
    as it is made to <out>/results/predicted.jsonl (zoo.store.store, saved_by "zoo.select --predict"), the folder
    checked before anything is counted."""
    import contextlib

    from ..predict.rows import saved
    from ..store.data_dir import out_or_default
    from ..options.values import check_out_dir
    from ..store.store import ResultStore

    store = ResultStore(check_out_dir(out_or_default(asked.out))) if asked.save else None
    with contextlib.ExitStack() as held:
        locked = []

        def on_row(row: dict) -> None:       # the folder is locked (and made) at the first row: bad input writes nothing
            if not locked:
                locked.append(held.enter_context(store.locked()))
            store.append_predicted(saved(row, "zoo.select --predict"))

        found = on_row if store else None
        return across_devices(asked, found) if "," in asked.device else predicted_select(asked, found)


def across_devices(asked: Predicted, on_row=None) -> dict:
    """Several devices ("L4,A100,H100"): each one's predicted_select answer, and per model the device that wins
    on images per dollar (with a price for each) or per second (zoo.predict.decision.decide), among the devices that
    shortlist it."""
    import dataclasses

    from ..options import predict_devices, prices_per_hour
    from ..predict.decision import decide

    sheets = predict_devices(asked.device)
    prices = None if asked.price_per_hour is None else prices_per_hour(str(asked.price_per_hour), sheets)
    from ..predict.decision import Counts

    counts = Counts(asked.reparam)              # one count of each forward for every device
    per_device = {s.name: predicted_select(dataclasses.replace(asked, device=s.name, price_per_hour=prices[s.name]
                                                               if prices else None), on_row, counts) for s in sheets}
    devices = list(per_device)
    by_model: dict[str, list[dict]] = {}
    for answer in per_device.values():
        for row in answer["shortlist"]:
            by_model.setdefault(row["model"], []).append(row)
    query = {**next(iter(per_device.values()))["query"], "predict": devices, "price_per_hour": prices}
    return {"predicted": True, "query": query, "devices": devices, "per_device": per_device,
            "decisions": [decide(rows, prices) for rows in by_model.values() if len(rows) > 1]}


@dataclass(frozen=True)
class Predicted:
    """One --predict question, as given (predicted_select checks it): the API's zoo.select options of the
    same names (zoo.options.select.OPTIONS), or the command line's text."""
    device: str
    models: Union[str, list, None] = "all"
    resolution: Union[str, int, tuple, Size] = 224
    dtype: str = "fp32"
    batch_size: Union[int, str] = 1
    max_latency_ms: Union[float, str, None] = None
    min_imgs_per_s: Union[float, str, None] = None
    rank: str = "imgs_per_s"
    price_per_hour: Union[float, str, None] = None
    out: Optional[str] = None           # where answer() appends the predicted rows (None: the user data folder)
    save: bool = False                  # answer(): append them (the command line and select(): unless --no-save)
    reparam: str = "trained"            # the form a re-parameterisable model is counted in (zoo.options --reparam)
    tf32: str | None = None            # --tf32 on|off; None: PyTorch's defaults (zoo.predict.inference.predict)


def from_options(options: dict) -> Predicted:
    """The question of zoo.select's options by their flat names with `predict` set (select(..., predict=DEVICE)),
    checked by zoo.options.predicted.predicted_fields (no other option is silently ignored)."""
    from ..options.predicted import predicted_fields

    return Predicted(**predicted_fields(options))


def predicted_select(asked: Predicted, on_row=None, counts=None) -> dict:
    """{"predicted": true, "query", "shortlist", "excluded"}: each model's calibrated prediction on the datasheet
    device (zoo.predict.inference) at the size, batch ("best": the best one within max_latency_ms,
    zoo.predict.rows.best_batch) and dtype asked, those that break the device's memory or a constraint excluded
    (with the first they broke), the rest ranked. UsageError for bad options, before anything is counted.
    on_row: called with each row as it is made; counts: a zoo.predict.decision.Counts shared with other devices."""
    from ..options.predicted import check_predicted
    from ..predict.decision import Counts
    from ..predict.rows import best_batch

    checked = check_predicted(asked)
    size, best, batch, limits, sheet, models = (checked[k] for k in ("size", "best", "batch", "limits", "device",
                                                                    "models"))
    counts = counts or Counts(asked.reparam, asked.tf32)
    kept, excluded = [], []
    for model in models:
        def at(b: int):
            return counts.row(Request(model, size, b, asked.dtype), sheet, limits["price_per_hour"])

        row = (best_batch(at, limits["max_latency_ms"]) if best else at(batch)).to_json()
        row["top1"] = _top1(model, size)
        broke = screen(row, limits["max_latency_ms"], limits["min_imgs_per_s"])
        (excluded if broke else kept).append({**row, "excluded": broke} if broke else row)
        if on_row:
            on_row((excluded if broke else kept)[-1])
    kept.sort(key=lambda r: -(r.get(asked.rank) or 0))
    query = {"predict": sheet.name, "models": models, "resolution": size.compact, "batch_size": "best" if best else batch,
             "dtype": asked.dtype, "rank": asked.rank, "reparam": asked.reparam, "tf32": asked.tf32, **limits}
    return {"predicted": True, "query": query, "shortlist": kept, "excluded": excluded}


def _top1(model: str, size) -> float | None:
    from ..models.accuracy import checkpoint_at

    h, w = size.hw
    found = checkpoint_at(model, h) if h == w else None
    return float(found["top1"]) if found and found.get("top1") is not None else None
