"""zoo.compare's options checked, and the cross-option rules only it has, with one UsageError (exit 2, one line)
before any work or any write: `checked(args)` takes the parsed command line (zoo.compare.cli.build_parser) and
returns it with every value parsed (models, Sizes, batches, metrics, the Timing). What is refused elsewhere, and
why: a timm: model's size (zoo.runs.plan.check_timm_size: it needs the model built on meta), --predict's device,
dtype and TF32 (zoo.predict.inference.check_predict: the datasheets' and the calibration's own limits), a Ray
cluster that cannot be reached (zoo.runs.ray_executor), and files that are not regular (zoo.store.safe_io)."""
from __future__ import annotations

import argparse

from ..errors import UsageError
from ..models.registry import TIMM_PREFIX, get_spec
from . import FORMATS, OPTIMIZERS, check_heads, dtype_of, pretraining_option, timing_of, weights_option
from .values import (check_memory_override, check_out_dir, choice, frozen_stages_option, model_names, number,
                     pad_size, positive_ints, sizes, split_list)

METRICS = ("cost", "memory", "throughput", "train")
DEFAULT_METRICS = ("cost", "memory", "throughput")
NO_STAGES = "has blocks, not stages (CNNs and Swin have stages)"


def checked(args: argparse.Namespace) -> argparse.Namespace:
    """The command line's values parsed and every rule applied, in this order; `args.timing` the one Timing."""
    from ..models.detectors import DETECTOR_NAMES
    from ..models.segmenters.specs import SEGMENTERS
    from ..store.data_dir import out_or_default
    from ..runs.executors import EXECUTORS
    from ..runs.tasks import Timing

    args.models = model_names(args.models)
    args.resolutions = sizes(args.resolutions) if args.resolutions is not None else None
    args.sweep = args.batch_sizes.strip() == "sweep"
    args.batch_sizes = [1] if args.sweep else positive_ints(args.batch_sizes, "batch-sizes")
    if args.sweep != (args.latency_target_ms is not None):
        raise UsageError("--batch-sizes sweep and --latency-target-ms go together")
    if args.sweep:
        args.latency_target_ms = number(args.latency_target_ms, "latency-target-ms")
    args.pad_to = None if args.pad_to is None else number(args.pad_to, "pad-to")
    args.backends = list(dict.fromkeys(split_list(args.backend, "backend")))      # checked with the timing
    if args.metrics is None:
        args.metrics = ",".join(m for m in DEFAULT_METRICS if not (args.slide and m == "throughput"))
    args.metrics = list(dict.fromkeys(choice(m, METRICS, "metric") for m in split_list(args.metrics, "metrics")))
    args.slide = slide_option(args.slide, args.segmenter, args.metrics)
    check_memory_override()
    if args.frozen_stages is not None:
        args.frozen_stages = frozen_stages_option(args.frozen_stages)
    if args.optimizer is not None:
        choice(args.optimizer, OPTIMIZERS, "optimizer")
        if "train" not in args.metrics:
            raise UsageError("--optimizer: the training step's memory; needs --metrics with train")
    if args.detector is not None:
        choice(args.detector, DETECTOR_NAMES, "detector")
    if args.segmenter is not None:
        choice(args.segmenter, tuple(SEGMENTERS), "segmenter")
    check_heads(args.features, args.frozen_stages, args.detector, args.segmenter)
    choice(args.format, FORMATS, "format")
    args.weights, args.pretraining = weights_option(args.weights), pretraining_option(args.pretraining)
    args.dtype = dtype_of(args.dtype, args.predict is not None)
    choice(args.executor, EXECUTORS, "executor")
    args.device_asked = args.device
    if args.ray_address is not None and args.executor != "ray":
        raise UsageError("--ray-address: only used with --executor ray")
    if args.sweep and ("throughput" not in args.metrics or args.executor != "local"):
        raise UsageError("--batch-sizes sweep: needs --metrics throughput and the local executor")
    if args.predict is None:
        for name, given in (("--price-per-hour", args.price_per_hour is not None),
                            ("--reparam", args.reparam != "trained"),
                            ("--tf32 (a timed run takes the process's own torch.backends settings)",
                             args.tf32 is not None),
                            ("--torch (a timed run runs the installed torch)", args.torch is not None),
                            ("--attention (a timed run runs the model's own attention)", args.attention is not None),
                            ("--epochs, --train-images, --gpus (they take --predict and --metrics train)",
                             args.epochs is not None or args.train_images is not None or args.gpus != "1")):
            if given:
                raise UsageError(f"{name}: only with --predict")
    else:                                   # before the timing's checks: a prediction times nothing
        check_predict_options(args)
    asked = Timing(device=args.device, threads=args.threads, quick=args.quick, channels_last=args.channels_last,
                   compile=args.compile, iters=args.iters, min_seconds=args.min_seconds)    # per backend: plan_tasks
    args.timing = timing_of(asked, args.backends, args.dtype, "train" in args.metrics,
                            local=args.executor != "ray")      # with Ray the GPUs are the workers'
    if args.no_save and (args.resume or args.reprobe_peak):
        raise UsageError(f"--{'resume' if args.resume else 'reprobe-peak'} reads results/, which --no-save turns off")
    if not args.no_save and not (args.predict is not None and args.metrics == ["train"]):    # that one writes nothing
        args.out = check_out_dir(out_or_default(args.out))
    if args.executor == "ray":
        from ..runs.ray_executor import check_ray

        check_ray(args.ray_address)
    check_stages(args.models, args.frozen_stages, args.detector, args.features, args.segmenter)
    check_sizes(args.models, args.resolutions, args.pad_to)
    return args


def check_predict_options(args: argparse.Namespace) -> None:
    """--predict's devices, prices and form; a UsageError (exit 2, one line) for any option it does not model,
    never a silent figure of something else (the backbone only, inference only, eager, a default timing)."""
    from . import REPARAM_FORMS, attention_option, predict_devices, prices_per_hour, torch_option
    from ..predict.inference import check_predict

    unmodelled = [name for name, given in (("--slide (counted, not timed)", args.slide is not None),
                                           ("--metrics train with other metrics",
                                            "train" in args.metrics and args.metrics != ["train"]),
                                           ("--backend onnxruntime", "onnxruntime" in args.backends),
                                           ("--compile", args.compile is not None)) if given]
    if unmodelled:
        raise UsageError(f"--predict: the estimate is an eager forward or training step without torch.compile; it "
                         f"does not model {', '.join(unmodelled)} (drop {'them' if len(unmodelled) > 1 else 'it'})")
    ignored = [name for name, given in (("--device", args.device_asked != "auto"), ("--threads", args.threads),
                                        ("--quick", args.quick), ("--iters", args.iters),
                                        ("--min-seconds", args.min_seconds), ("--resume", args.resume),
                                        ("--reprobe-peak", args.reprobe_peak),
                                        ("--executor", args.executor != "local"),
                                        ("--weights/--pretraining (no accuracy is shown)",
                                         args.weights != "default" or bool(args.pretraining))) if given]
    if ignored:
        raise UsageError(f"--predict: times nothing here, so {', '.join(ignored)} would change nothing (drop "
                         f"{'them' if len(ignored) > 1 else 'it'})")
    choice(args.reparam, REPARAM_FORMS, "reparam")
    args.torch, args.attention = torch_option(args.torch), attention_option(args.attention)
    args.predict = predict_devices(args.predict)
    check_train_predict(args)                # --metrics train alone: one device, the schedule's options
    if args.format == "csv" and len(args.predict) > 1:
        raise UsageError("--format csv: one device's rows; several devices give a decision too (markdown or json)")
    for sheet in args.predict:
        check_predict(sheet, args.dtype, args.tf32, train=args.metrics == ["train"])
    if args.price_per_hour is not None:
        args.price_per_hour = prices_per_hour(args.price_per_hour, args.predict)


def check_train_predict(args) -> None:
    """--predict with --metrics train (args.predict: the sheets): one device, and the schedule options' values
    (UsageError, exit 2); --epochs and --train-images go together, --gpus above 1 needs a sourced interconnect."""
    from analysis.predict.schedule import allreduce_seconds

    schedule_given = args.epochs is not None or args.train_images is not None or args.gpus != "1"
    if args.metrics != ["train"]:
        if schedule_given:
            raise UsageError("--epochs, --train-images, --gpus: only with --predict and --metrics train")
        return
    if len(args.predict) > 1 or args.sweep:
        raise UsageError("--predict with --metrics train: one device, and a list of batch sizes (no sweep)")
    if getattr(args, "out", None) is not None:          # zoo.compare's; zoo.select's training question has none
        raise UsageError("--out: --predict with --metrics train prints its estimate and writes no rows; drop --out")
    if (args.epochs is None) != (args.train_images is None):
        raise UsageError("--epochs and --train-images go together")
    args.gpus = number(args.gpus, "gpus")
    if args.epochs is not None:
        args.epochs = number(args.epochs, "epochs")
        args.train_images = number(args.train_images, "train-images")
        global_batch = max(getattr(args, "batch_sizes", None) or [args.batch_size]) * args.gpus
        if args.epochs * args.train_images < global_batch:
            raise UsageError(f"--epochs {args.epochs:g} of {args.train_images:,} images is {args.epochs * args.train_images:.3g} "
                             f"images, under one step of its global batch ({global_batch:,}): no schedule")
    try:
        allreduce_seconds(0, args.gpus, args.predict[0])
    except ValueError as e:
        raise UsageError(f"--gpus: {e}") from None


def slide_option(text: str | None, segmenter: str | None, metrics: list[str]) -> tuple[int, int] | None:
    """--slide CROP,STRIDE: mmseg's sliding-window test, counted on a segmenter's cost row (not timed)."""
    if text is None:
        return None
    from ..models.segmenters.slide import check_slide

    if segmenter is None:
        raise UsageError("--slide: the sliding-window test of a segmenter; needs --segmenter")
    if "throughput" in metrics:
        raise UsageError("--slide: counted, not timed (timing runs the whole image); drop throughput from --metrics")
    items = split_list(text, "slide")
    if len(items) != 2:
        raise UsageError(f"--slide: expected CROP,STRIDE (two px sides, e.g. 512,341), got {text!r}")
    crop, stride = (number(item, "slide") for item in items)
    why = check_slide(crop, stride)
    if why:
        raise UsageError(f"--slide {text}: {why}")
    return crop, stride


def no_stages(model: str) -> bool:
    """Whether `model` has blocks instead of stages to freeze (a plain ViT, ViTDet's backbone)."""
    spec = get_spec(model)
    return spec.is_token_model or spec.family == "vitdet"


def check_stages(models: list[str], frozen_stages: int | None, detector: str | None, features: bool,
                 segmenter: str | None = None) -> None:
    """--frozen-stages and --detector need backbones with stages (maps at strides 4-32); --segmenter takes a
    plain ViT too (through its MultiLevelNeck). The options' own rules (one head, ...) are zoo.options.check_heads'."""
    for model in models:
        spec = get_spec(model)
        if model.startswith(TIMM_PREFIX):
            continue
        if segmenter == "sem_fpn" and spec.is_token_model:
            raise UsageError(f"--segmenter sem_fpn: {model} is a plain ViT; semantic FPN takes maps at strides 4-32")
        if detector and spec.is_token_model:
            raise UsageError(f"--detector: {model} gives one stride-{spec.patch_size} map, not maps at strides 4-32 "
                             f"(use vitdet_b16, vitdet_l16 or vitdet_h16)")
        if frozen_stages is not None and no_stages(model):
            raise UsageError(f"--frozen-stages: {model} {NO_STAGES}")


def check_sizes(models: list[str], resolutions: list | None, pad_to: int | None) -> None:
    """Each size (padded by --pad-to) within the bound, and taken by at least one model's rule (the others get a
    skipped row: zoo.runs.plan.plan_tasks)."""
    for size in dict.fromkeys(pad_size(s, pad_to) for s in resolutions or []):
        if not any(get_spec(m).rule.accepts(size) for m in models):
            rules = "; ".join(f"{m}: {get_spec(m).rule.describe()}, nearest "
                              f"{', '.join(n.label for n in get_spec(m).rule.nearest(size))}" for m in models)
            raise UsageError(f"--resolutions {size.label}: no requested model can take it ({rules})")
