"""`python -m zoo.select --predict DEVICE ...`: the backbones that meet a throughput or latency budget on a GPU that
is not here, by archzoo's calibrated prediction (zoo.predict.inference), ranked; with --metrics train, those whose
predicted training fits the device at the batch asked per GPU and, with a schedule, finishes within
--max-train-hours (zoo.predict.train). Every figure is marked predicted; models that miss a constraint are listed
with the first one they broke.

Kept apart from zoo.select's measured path: nothing is timed; counting is on meta. The command line (one parser,
zoo.select.cli, dispatching here: answer_command_line) and `zoo.select.select(..., predict=DEVICE)` both answer
inference through `predicted_select`.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Optional, Union

from analysis.size import Size
from analysis.units import GIB

from ..answers.text import predicted_text
from ..errors import UsageError, ZooError
from ..options import dtype_of
from ..options.predicted import check_train_predicted
from ..options.values import choice, model_names
from ..runs.request import Request


def screen(row: dict, max_latency_ms: float | None, min_imgs_per_s: float | None) -> str | None:
    """The first constraint the predicted row breaks, or None."""
    if not row["fits_memory"]:
        return f"serving memory {row['serve_bytes'] / GIB:.1f} GiB > the device's {row['device_memory_bytes'] / 1e9:g} GB"
    if max_latency_ms is not None and row["latency_ms"] > max_latency_ms:
        return f"predicted {row['latency_ms']:.3g} ms / batch > {max_latency_ms:g}"
    if min_imgs_per_s is not None and row["imgs_per_s"] < min_imgs_per_s:
        return f"predicted {row['imgs_per_s']:.4g} img/s < {min_imgs_per_s:g}"
    return None


def answer_command_line(args: argparse.Namespace) -> int:
    """zoo.select --predict from the command line's one parser (zoo.select.cli; zoo.options.predicted.check_mode
    has refused the options this mode does not take): inference, or with --metrics train the training step;
    printed as a table or JSON. 0; 1 when its rows could not all be saved (the answer printed whole); 2 for bad
    input (one line on stderr, nothing written)."""
    try:
        choice(args.format, ("table", "json"), "format")
        if args.metrics is not None:
            result = predicted_train_select(check_train_predicted(args))
        else:
            result = answer(Predicted(args.predict, args.models, args.resolution, dtype_of(args.dtype, True),
                                      args.batch_size or 1, args.max_latency_ms, args.min_imgs_per_s,
                                      args.rank or "imgs_per_s", args.price_per_hour, args.out, not args.no_save,
                                      args.reparam, args.tf32, args.torch, args.attention))
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    if result.get("not_saved"):         # the answer still prints, below; the run did not do all it was asked
        print(f"zoo.select: error: {result['not_saved']}; the answer is printed", file=sys.stderr)
    rank = result["query"]["rank"]
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    elif args.metrics is not None:
        from ..predict.text import train_markdown

        kept = result["shortlist"]
        sys.stdout.write(f"ranked by predicted {rank}\n\n"
                         + (train_markdown(kept) if kept else "PREDICTED: no model meets the constraints\n"))
        sys.stdout.write("".join(f"excluded: {r['model']}: {r['excluded']}\n" for r in result["excluded"]))
    elif "per_device" in result:
        from ..predict.text import decision_markdown

        for one in result["per_device"].values():
            sys.stdout.write(predicted_text(one["shortlist"], one["excluded"], rank) + "\n")
        if result["decisions"]:
            query = result["query"]
            sys.stdout.write(decision_markdown(result["decisions"],
                                               query["max_latency_ms"] if query["batch_size"] == "best" else None))
    else:
        sys.stdout.write(predicted_text(result["shortlist"], result["excluded"], rank))
    return 1 if result.get("not_saved") else 0


def answer(asked: Predicted) -> dict:
    """predicted_select for one device, across_devices for several; with asked.save each predicted row is appended
    as it is made to <out>/results/predicted.jsonl (zoo.store.store, saved_by "zoo.select --predict"), the folder
    checked before anything is counted. A row the folder cannot take (a full disk) ends the saving, not the answer:
    the answer comes back whole with "not_saved", why."""
    import contextlib

    from ..predict.rows import saved
    from ..store.data_dir import out_or_default
    from ..options.values import check_out_dir
    from ..store.store import ResultStore, StoreWriteError

    store = ResultStore(check_out_dir(out_or_default(asked.out))) if asked.save else None
    not_saved: list[str] = []
    with contextlib.ExitStack() as held:
        locked = []

        def on_row(row: dict) -> None:       # the folder is locked (and made) at the first row: bad input writes nothing
            if not_saved:
                return
            try:
                if not locked:
                    locked.append(held.enter_context(store.locked()))
                store.append_predicted(saved(row, "zoo.select --predict"))
            except (StoreWriteError, OSError) as e:
                not_saved.append(str(e) if isinstance(e, StoreWriteError) else f"cannot write to {store.dir}: "
                                 f"{e.strerror or e}; rows written before are kept")

        found = on_row if store else None
        result = across_devices(asked, found) if "," in asked.device else predicted_select(asked, found)
    return {**result, "not_saved": not_saved[0]} if not_saved else result


def across_devices(asked: Predicted, on_row=None) -> dict:
    """Several devices ("L4,A100,H100"): each one's predicted_select answer, and per model the device that wins
    on images per dollar (with a price for each) or per second (zoo.predict.decision.decide), among the devices that
    shortlist it."""
    import dataclasses

    from ..options import attention_option, predict_devices, prices_per_hour, torch_option
    from ..predict.decision import Counts, decisions

    sheets = predict_devices(asked.device)
    prices = None if asked.price_per_hour is None else prices_per_hour(str(asked.price_per_hour), sheets)
    counts = Counts(asked.reparam, asked.tf32, torch=torch_option(asked.torch),       # one count of each forward
                    attention=attention_option(asked.attention))                     # for every device
    per_device = {s.name: predicted_select(dataclasses.replace(asked, device=s, price_per_hour=prices[s.name]
                                                               if prices else None), on_row, counts) for s in sheets}
    devices, shortlisted = list(per_device), [row for one in per_device.values() for row in one["shortlist"]]
    query = {**next(iter(per_device.values()))["query"], "predict": devices, "price_per_hour": prices}
    return {"predicted": True, "query": query, "devices": devices, "per_device": per_device,
            "decisions": decisions(shortlisted, prices, same_batch=False)}


@dataclass(frozen=True)
class Predicted:
    """One --predict question, as given (predicted_select checks it): the API's zoo.select options of the
    same names (zoo.options.select.OPTIONS), or the command line's text."""
    device: object                      # the device(s) as typed ("L4,A100"), or one's DeviceSheet (across_devices)
    models: Union[str, list, None] = "all"
    resolution: Union[str, int, tuple, Size] = 224
    dtype: str = "bf16"                 # zoo.options.dtype_of's default for a prediction
    batch_size: Union[int, str] = 1
    max_latency_ms: Union[float, str, None] = None
    min_imgs_per_s: Union[float, str, None] = None
    rank: str = "imgs_per_s"
    price_per_hour: Union[float, str, None] = None
    out: Optional[str] = None           # where answer() appends the predicted rows (None: the user data folder)
    save: bool = False                  # answer(): append them (the command line and select(): unless --no-save)
    reparam: str = "trained"            # the form a re-parameterisable model is counted in (zoo.options --reparam)
    tf32: str | None = None            # --tf32 on|off; None: PyTorch's defaults (zoo.predict.inference.predict)
    torch: str | None = None           # --torch X.Y; None: the installed release (zoo.predict.versions)
    attention: str | None = None       # --attention fused|unfused; None: as that release runs timm's models


def predicted_select(asked: Predicted, on_row=None, counts=None) -> dict:
    """{"predicted": true, "query", "shortlist", "excluded"}: each model's calibrated prediction on the datasheet
    device (zoo.predict.inference) at the size, batch ("best": the best one within max_latency_ms,
    zoo.predict.rows.best_batch) and dtype asked, those that break the device's memory or a constraint excluded
    (with the first they broke), the rest ranked. UsageError for bad options, before anything is counted.
    on_row: called with each row as it is made; counts: a zoo.predict.decision.Counts shared with other devices."""
    from ..options.predicted import check_predicted
    from ..predict.decision import Counts
    from ..predict.rows import TooLarge, best_batch

    checked = check_predicted(asked)
    size, best, batch, limits, sheet, models = (checked[k] for k in ("size", "best", "batch", "limits", "device",
                                                                    "models"))
    counts = counts or Counts(asked.reparam, asked.tf32, torch=checked["torch"], attention=asked.attention)

    def predicted(model: str) -> dict:
        def at(b: int):
            return counts.row(Request(model, size, b, asked.dtype), sheet, limits["price_per_hour"])

        try:
            return (best_batch(at, limits["max_latency_ms"]) if best else at(batch)).to_json()
        except TooLarge as e:
            return {"model": model, "device": sheet.name, "skipped": str(e)}

    kept, excluded = shortlist(map(predicted, models), size, asked.rank, on_row,
                               lambda row: screen(row, limits["max_latency_ms"], limits["min_imgs_per_s"]))
    query = {"predict": sheet.name, "models": models, "resolution": size.compact, "batch_size": "best" if best else batch,
             "dtype": asked.dtype, "rank": asked.rank, "reparam": asked.reparam, "tf32": asked.tf32,
             "torch": asked.torch, "attention": asked.attention, **limits}
    return {"predicted": True, "query": query, "shortlist": kept, "excluded": excluded}


def shortlist(rows, size, rank: str, on_row, broken) -> tuple[list[dict], list[dict]]:
    """(kept, excluded) of predicted rows: each with its model's published top-1 at `size`, excluded with the first
    constraint it breaks (broken(row) -> the reason or None), handed to on_row as it comes; the kept ranked."""
    from ..models.accuracy import checkpoint_at

    kept, excluded = [], []
    for row in rows:
        h, w = size.hw
        found = checkpoint_at(row["model"], h) if h == w else None
        row["top1"] = float(found["top1"]) if found and found.get("top1") is not None else None
        broke = row.get("skipped") or broken(row)       # skipped: too large to count, no prediction to keep
        (excluded if broke else kept).append({**row, "excluded": broke} if broke else row)
        if on_row and not row.get("skipped"):
            on_row((excluded if broke else kept)[-1])
    return sorted(kept, key=lambda r: -(r.get(rank) or 0)), excluded


def train_screen(row: dict, max_hours: float | None) -> str | None:
    """The first constraint the predicted row breaks, or None (memory unmodelled, None on a TPU, breaks none)."""
    if row["train_fits_memory"] is False:
        return (f"training memory {row['train_gpu_bytes'] / GIB:.1f} GiB at batch {row['batch_size']} per GPU > "
                f"the device's {row['device_memory_bytes'] / 1e9:g} GB")
    if max_hours is not None and row["train_wall_hours"] > max_hours:
        return f"predicted {row['train_wall_hours']:.3g} wall hours > {max_hours:g}"
    return None


def predicted_train_select(args: argparse.Namespace) -> dict:
    from ..predict.rows import TooLarge
    from ..predict.train import predict_train

    models, sheet = model_names(args.models), args.predict[0]
    price = (args.price_per_hour or {}).get(sheet.name)

    def predicted(model: str) -> dict:
        try:
            return predict_train(Request(model, args.size, args.batch_size, args.dtype, train=True,
                                         optimizer=args.optimizer), sheet, args.gpus, args.epochs, args.train_images,
                                 price, torch=args.torch, attention=args.attention)
        except TooLarge as e:
            return {"model": model, "device": sheet.name, "skipped": str(e)}

    rows = map(predicted, models)
    kept, excluded = shortlist(rows, args.size, args.rank, None, lambda row: train_screen(row, args.max_train_hours))
    query = {"predict": sheet.name, "metrics": "train", "models": models, "resolution": args.size.compact,
             "batch_size": args.batch_size, "dtype": args.dtype, "optimizer": args.optimizer, "gpus": args.gpus,
             "epochs": args.epochs, "train_images": args.train_images, "max_train_hours": args.max_train_hours,
             "price_per_hour": price, "rank": args.rank, "torch": args.torch and ".".join(map(str, args.torch)),
             "attention": args.attention}
    return {"predicted": True, "query": query, "shortlist": kept, "excluded": excluded}
