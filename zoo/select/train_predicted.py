"""`python -m zoo.select --predict DEVICE --metrics train ...`: the backbones whose predicted training fits the
device at the batch asked per GPU and, with a schedule, finishes within --max-train-hours, ranked; every figure
is marked predicted (zoo.predict.train: the step, its band, its memory; analysis.predict.schedule: the
schedule). Models that miss a constraint are listed with the first one they broke. Nothing is timed or written.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import UsageError, UsageParser, ZooError
from ..options.predicted import TRAIN_RANKS as RANKS
from ..options.values import model_names
from ..runs.request import Request

GIB = 1024 ** 3


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.select --predict DEVICE --metrics train", description=__doc__.splitlines()[0])
    p.add_argument("--predict", metavar="DEVICE", required=True, help="a datasheet device (zoo.compare --predict)")
    p.add_argument("--metrics", required=True, help="train")
    p.add_argument("--models", default="all")
    p.add_argument("--resolution", default="224")
    p.add_argument("--dtype", default="bf16", help="fp32, bf16, fp16 (bf16/fp16: torch.autocast; default bf16)")
    p.add_argument("--batch-size", default="64", help="images per GPU; a model must fit it (default 64)")
    p.add_argument("--optimizer", default="sgd", help="sgd (timm's benchmark: Nesterov momentum) or adamw")
    p.add_argument("--epochs", help="with --train-images: the schedule, for hours")
    p.add_argument("--train-images", help="images per epoch")
    p.add_argument("--gpus", default="1", help="data-parallel devices (default 1)")
    p.add_argument("--max-train-hours", help="with --epochs: predicted wall hours of the schedule (expectation)")
    p.add_argument("--price-per-hour", metavar="USD", help="per device-hour, which you give: adds the cost")
    p.add_argument("--rank", default="train_imgs_per_s", help=f"{', '.join(RANKS)} (default train_imgs_per_s)")
    p.add_argument("--format", default="table", help="table or json")
    return p


def screen(row: dict, max_hours: float | None) -> str | None:
    """The first constraint the predicted row breaks, or None (memory unmodelled, None on a TPU, breaks none)."""
    if row["train_fits_memory"] is False:
        return (f"training memory {row['train_gpu_bytes'] / GIB:.1f} GiB at batch {row['batch_size']} per GPU > "
                f"the device's {row['device_memory_bytes'] / 1e9:g} GB")
    if max_hours is not None and row["train_wall_hours"] > max_hours:
        return f"predicted {row['train_wall_hours']:.3g} wall hours > {max_hours:g}"
    return None


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The options, checked before anything is counted (zoo.options.predicted; UsageError: exit 2)."""
    from ..options.predicted import check_train_predicted

    return check_train_predicted(build_parser().parse_args(argv))


def predicted_train_select(args: argparse.Namespace) -> dict:
    from ..predict.train import predict_train
    from .predicted import _top1

    models = model_names(args.models)
    sheet = args.predict[0]
    price = (args.price_per_hour or {}).get(sheet.name)
    kept, excluded = [], []
    for model in models:
        request = Request(model, args.size, args.batch_size, args.dtype, train=True, optimizer=args.optimizer)
        row = predict_train(request, sheet, args.gpus, args.epochs, args.train_images, price)
        row["top1"] = _top1(row["model"], args.size)
        broke = screen(row, args.max_train_hours)
        (excluded if broke else kept).append({**row, "excluded": broke} if broke else row)
    kept.sort(key=lambda r: -(r.get(args.rank) or 0))
    query = {"predict": sheet.name, "metrics": "train", "models": models, "resolution": args.size.compact,
             "batch_size": args.batch_size, "dtype": args.dtype, "optimizer": args.optimizer, "gpus": args.gpus,
             "epochs": args.epochs, "train_images": args.train_images, "max_train_hours": args.max_train_hours,
             "price_per_hour": price, "rank": args.rank}
    return {"predicted": True, "query": query, "shortlist": kept, "excluded": excluded}


def main(argv: list[str] | None = None) -> int:
    from ..predict.text import train_markdown

    try:
        args = parse(argv)
        result = predicted_train_select(args)
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    kept = result["shortlist"]
    sys.stdout.write(f"ranked by predicted {args.rank}\n\n"
                     + (train_markdown(kept) if kept else "PREDICTED: no model meets the constraints\n"))
    sys.stdout.write("".join(f"excluded: {r['model']}: {r['excluded']}\n" for r in result["excluded"]))
    return 0
