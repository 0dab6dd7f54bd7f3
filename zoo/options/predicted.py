"""zoo.select --predict's options checked (zoo.select.predicted): which options each way of answering takes (one
parser, three modes: check_mode), and a datasheet device's question, one UsageError (exit 2, one line) before
anything is counted. The device, dtype and TF32 limits are the calibration's own
(zoo.predict.inference.check_predict), called from here."""
from __future__ import annotations

import argparse

from ..errors import UsageError
from .values import check_dtype, choice, model_names, number, one_size

RANKS = ("imgs_per_s", "top1", "imgs_per_usd")
TRAIN_RANKS = ("train_imgs_per_s", "top1")      # --metrics train
TAKES = ("models", "resolution", "dtype", "batch_size", "max_latency_ms", "min_imgs_per_s", "rank")  # of OPTIONS
# the command line's options each --predict mode takes (flat names); the measured mode takes all but PREDICT_ONLY
PREDICT_TAKES = ("predict", *TAKES, "price_per_hour", "reparam", "tf32", "torch", "attention", "out", "no_save",
                 "format")
TRAIN_TAKES = ("predict", "metrics", "models", "resolution", "dtype", "batch_size", "optimizer", "epochs", "train_images",
               "gpus", "max_train_hours", "price_per_hour", "rank", "torch", "attention", "format")
PREDICT_ONLY = ("metrics", "price_per_hour", "reparam", "tf32", "torch", "attention", "epochs", "train_images", "gpus",
                "max_train_hours")


def check_mode(given: list[str], predict: str | None, metrics: str | None) -> None:
    """zoo.select's one parser answers three ways: measured, --predict (inference) and --predict --metrics train.
    `given`: the options set to other than their default (flat names); one the way asked does not take is refused
    in one line, never silently ignored."""
    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    if predict is None:
        extra = [name for name in given if name in PREDICT_ONLY]
        if extra:
            raise UsageError(f"{flag(extra[0])}: only with --predict")
        return
    if metrics not in (None, "train"):
        raise UsageError("--metrics: zoo.select --predict takes train here (inference: leave --metrics out)")
    takes = TRAIN_TAKES if metrics else PREDICT_TAKES
    extra = [name for name in given if name not in takes]
    if extra:
        listed = ", ".join(flag(n) for n in takes if n not in ("predict", "metrics", "format"))
        raise UsageError(f"--predict{' --metrics train' if metrics else ''}: takes only {listed}; drop "
                         f"{flag(extra[0])}")


def predicted_fields(options: dict) -> dict:
    """The fields of zoo.select.predicted.Predicted from zoo.select's options by their flat names
    (zoo.options.select.OPTIONS) with `predict` set (select(..., predict=DEVICE)); a UsageError for any other
    option set (never silently ignored), TypeError for a name that is no option."""
    from . import dtype_of
    from .select import DEFAULTS, OPTIONS

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"zoo.select: no option {', '.join(unknown)}")
    asked = {**DEFAULTS, **options}
    check_mode([name for name in OPTIONS if name != "save" and asked[name] != DEFAULTS[name]], asked["predict"], None)
    return {"device": asked["predict"], **{name: asked[name] for name in TAKES}, "out": asked["out"],
            "save": asked["save"], "dtype": dtype_of(asked["dtype"], predicting=True)}


def check_predicted(asked) -> dict:
    """A zoo.select.predicted.Predicted checked, in this order: {"size", "best" (--batch-size best), "batch",
    "limits" (max_latency_ms, min_imgs_per_s, price_per_hour), "device" (its DeviceSheet), "models"}."""
    from ..predict.inference import check_predict
    from . import REPARAM_FORMS, attention_option, datasheet, prices_per_hour, torch_option

    choice(asked.rank, RANKS, "rank")
    choice(asked.reparam, REPARAM_FORMS, "reparam")
    size = one_size(asked.resolution, "resolution")
    best = str(asked.batch_size).strip() == "best"
    batch = None if best else number(asked.batch_size, "batch-size")  # as compare --predict
    limits = {name: None if getattr(asked, name) is None else number(getattr(asked, name), flag)
              for name, flag in (("max_latency_ms", "max-latency-ms"), ("min_imgs_per_s", "min-imgs-per-s"))}
    if best and limits["max_latency_ms"] is None:
        raise UsageError("--batch-size best: the best batch within --max-latency-ms, which it needs")
    sheet = datasheet(asked.device) if isinstance(asked.device, str) else asked.device
    check_predict(sheet, check_dtype(asked.dtype), asked.tf32)
    torch, _ = torch_option(asked.torch), attention_option(asked.attention)
    limits["price_per_hour"] = None if asked.price_per_hour is None else \
        prices_per_hour(str(asked.price_per_hour), [sheet])[sheet.name]      # finite, 0.001 to 1e6 USD per hour
    if asked.rank == "imgs_per_usd" and limits["price_per_hour"] is None:
        raise UsageError("--rank imgs_per_usd needs --price-per-hour")
    models = model_names(asked.models if isinstance(asked.models, str) else ",".join(asked.models or ["all"]))
    return {"size": size, "best": best, "batch": batch, "limits": limits, "device": sheet, "models": models,
            "torch": torch}


def check_train_predicted(args: argparse.Namespace) -> argparse.Namespace:
    """zoo.select --predict DEVICE --metrics train's parsed options checked before anything is counted, the
    defaults of this mode filled in (a batch of 64 per GPU, bf16, ranked by train_imgs_per_s)."""
    from ..predict.inference import check_predict
    from . import attention_option, datasheet, dtype_of, prices_per_hour, torch_option
    from .compare import check_train_predict

    args.metrics, args.sweep = ["train"], False
    args.torch, args.attention = torch_option(args.torch), attention_option(args.attention)
    args.rank = choice(args.rank or "train_imgs_per_s", TRAIN_RANKS, "rank")
    choice(args.optimizer, ("sgd", "adamw"), "optimizer")
    args.size = one_size(args.resolution, "resolution")
    args.batch_size = number(args.batch_size or "64", "batch-size")
    args.dtype = dtype_of(args.dtype, predicting=True)
    args.predict = [datasheet(args.predict)]
    check_train_predict(args)                       # epochs, train images, gpus (and their interconnect)
    check_predict(args.predict[0], args.dtype, train=True)
    if args.max_train_hours is not None:
        if args.epochs is None:
            raise UsageError("--max-train-hours needs --epochs and --train-images")
        args.max_train_hours = number(args.max_train_hours, "max-train-hours")
    if args.price_per_hour is not None:          # the bounds every price option has (a number, one device)
        args.price_per_hour = prices_per_hour(args.price_per_hour, args.predict)
    return args
