"""zoo.select --predict's options checked (zoo.select.predicted, zoo.select.train_predicted): a datasheet GPU's
question, one UsageError (exit 2, one line) before anything is counted. The device, dtype and TF32 limits are the
calibration's own (zoo.runs.roofline_rows.check_predict), called from here."""
from __future__ import annotations

import argparse

from ..errors import UsageError
from .values import check_dtype, choice, model_names, one_size, positive_int, positive_number

RANKS = ("imgs_per_s", "top1", "imgs_per_usd")
TRAIN_RANKS = ("train_imgs_per_s", "top1")      # --metrics train
TAKES = ("models", "resolution", "dtype", "batch_size", "max_latency_ms", "min_imgs_per_s", "rank")  # of OPTIONS


def predicted_fields(options: dict) -> dict:
    """The fields of zoo.select.predicted.Predicted from zoo.select's options by their flat names
    (zoo.options.select.OPTIONS) with `predict` set (select(..., predict=DEVICE)); a UsageError for any other
    option set (never silently ignored), TypeError for a name that is no option."""
    from .select import DEFAULTS, OPTIONS

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"zoo.select: no option {', '.join(unknown)}")
    asked = {**DEFAULTS, **options}
    given = [name for name in OPTIONS
             if name not in ("predict", "out", "save", *TAKES) and asked[name] != DEFAULTS[name]]
    if given:
        raise UsageError(f"--predict: takes only --models, --resolution, --dtype, --batch-size, --max-latency-ms, "
                         f"--min-imgs-per-s and --rank; drop --{given[0].replace('_', '-')}")
    return {"device": asked["predict"], **{name: asked[name] for name in TAKES}, "out": asked["out"],
            "save": asked["save"]}


def check_predicted(asked) -> dict:
    """A zoo.select.predicted.Predicted checked, in this order: {"size", "best" (--batch-size best), "batch",
    "limits" (max_latency_ms, min_imgs_per_s, price_per_hour), "device" (the datasheet's name), "models"}."""
    from analysis.timing.devices import device_sheet

    from ..runs.roofline_rows import check_predict
    from . import REPARAM_FORMS, prices_per_hour

    choice(asked.rank, RANKS, "rank")
    choice(asked.reparam, REPARAM_FORMS, "reparam")
    size = one_size(asked.resolution, "resolution")
    best = str(asked.batch_size).strip() == "best"
    batch = None if best else positive_int(asked.batch_size, "batch-size")  # as compare --predict
    limits = {name: None if getattr(asked, name) is None else positive_number(getattr(asked, name), flag)
              for name, flag in (("max_latency_ms", "max-latency-ms"), ("min_imgs_per_s", "min-imgs-per-s"))}
    if best and limits["max_latency_ms"] is None:
        raise UsageError("--batch-size best: the best batch within --max-latency-ms, which it needs")
    check_predict(asked.device, check_dtype(asked.dtype), asked.tf32)
    name = device_sheet(asked.device).name
    limits["price_per_hour"] = None if asked.price_per_hour is None else \
        prices_per_hour(str(asked.price_per_hour), [name])[name]      # finite, 0.001 to 1e6 USD per hour
    if asked.rank == "imgs_per_usd" and limits["price_per_hour"] is None:
        raise UsageError("--rank imgs_per_usd needs --price-per-hour")
    models = model_names(asked.models if isinstance(asked.models, str) else ",".join(asked.models or ["all"]))
    return {"size": size, "best": best, "batch": batch, "limits": limits, "device": name, "models": models}


def check_train_predicted(args: argparse.Namespace) -> argparse.Namespace:
    """zoo.select --predict DEVICE --metrics train's parsed options checked before anything is counted."""
    from ..runs.roofline_rows import check_predict
    from .compare import check_train_predict

    if args.metrics != "train":
        raise UsageError("--metrics: zoo.select --predict takes train here (inference: leave --metrics out)")
    args.metrics, args.sweep = ["train"], False
    choice(args.format, ("table", "json"), "format")
    choice(args.rank, TRAIN_RANKS, "rank")
    choice(args.optimizer, ("sgd", "adamw"), "optimizer")
    args.size = one_size(args.resolution, "resolution")
    args.batch_size = positive_int(args.batch_size, "batch-size")
    check_dtype(args.dtype)
    check_train_predict(args)                       # epochs, train images, gpus (and their interconnect)
    check_predict(args.predict, args.dtype, train=True)
    if args.max_train_hours is not None:
        if args.epochs is None:
            raise UsageError("--max-train-hours needs --epochs and --train-images")
        args.max_train_hours = positive_number(args.max_train_hours, "max-train-hours")
    if args.price_per_hour is not None:          # the bounds every price option has (a number, one device)
        from analysis.timing.devices import device_sheet

        from . import prices_per_hour

        args.price_per_hour = prices_per_hour(args.price_per_hour, [device_sheet(args.predict).name])
    return args
