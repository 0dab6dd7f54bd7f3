"""The words and options zoo.compare and zoo.select share, defined once: output formats, timing backends, compile
modes, optimizers, the one parser of --pretraining and of --weights (zoo.models.accuracy's, as the Python API takes
them too), every option both commands take (`add_options`), with the same name, help and default, and the
cross-option rules both apply (`check_heads`, `check_timing`) and the one Timing each builds (`timing_of`)."""
from __future__ import annotations

import argparse
import math

from analysis.vocab import DEVICES, DTYPE_NAMES

from ..errors import UsageError

from .values import BOUNDS, pretraining_option, weights_option
from ..models.cards import PRETRAINING

FORMATS = ("table", "markdown", "csv", "json")              # zoo.compare's stdout
SELECT_FORMATS = tuple(f for f in FORMATS if f != "csv")    # zoo.select's: a shortlist with its reasons is no CSV
BACKENDS = ("eager", "onnxruntime")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
OPTIMIZERS = ("sgd", "adamw")       # whose fp32 state a training step's memory counts (zoo.runs.counted)
PREDICT_DTYPE = "bf16"     # --dtype's default with --predict (dtype_of)
REPARAM_FORMS = ("trained", "fused")   # --reparam: the form a re-parameterisable model is counted in
# --price-per-hour: USD per device-hour. Below a tenth of a cent images per dollar stop meaning anything (issue 42:
# 5e-324 printed Infinity); above a million no device is rented (zoo.options.values.BOUNDS holds them).
MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR = BOUNDS["price-per-hour"].low, BOUNDS["price-per-hour"].high


def dtype_of(asked: str | None, predicting: bool) -> str:
    """--dtype as asked, else its default: fp32 to measure, PREDICT_DTYPE to predict (timm's --amp tables)."""
    from .values import check_dtype

    return check_dtype(asked or (PREDICT_DTYPE if predicting else "fp32"))


def datasheet_devices() -> str:
    """The devices --predict takes, as help texts list them (from analysis.predict.devices' sheets)."""
    from analysis.predict.devices import listed

    return f"{listed('gpu')}; with --metrics train also {listed('tpu')}, a chip"


def _shared() -> dict[str, dict]:
    """Option -> argparse keywords; built on first use (the detector and segmenter names come from their specs, the
    devices from their datasheets)."""
    from ..models.detectors.specs import DETECTOR_NAMES
    from ..models.segmenters.specs import SEGMENTERS

    return {
        "--models": dict(help="comma list: registry names, wildcards (swin_*), 'all', or timm:<name>"),
        "--backend": dict(default="eager", help=f"timing runtime: {', '.join(BACKENDS)} (default eager; onnxruntime "
                                                f"needs pip install \"archzoo[onnx]\")"),
        "--pad-to": dict(help="pad each H x W up to a multiple of this first (as detection pipelines pad to 32); rows "
                              "record the size asked for in settings.padded_from"),
        "--features": dict(action="store_true", help="the backbone as a multi-scale feature extractor (no pooling, "
                                                     "no head), as detectors use it"),
        "--frozen-stages": dict(help="with --features, --detector or --segmenter: no gradients for the stem and the "
                                     "first K stages (mmdetection's frozen_stages; 0 = the stem only; -1 = nothing "
                                     "frozen, the same rows as without the option)"),
        "--detector": dict(help=f"count the whole detector on each backbone: {', '.join(DETECTOR_NAMES)} (FPN, RPN, "
                                f"RoI heads; 1000 proposals through the box heads, 100 through the mask heads). "
                                f"maskrcnn / cascade_maskrcnn: the mmdetection heads of the Swin and ConvNeXt tables, "
                                f"but on vitdet_* detectron2's ViTDet heads; mmdet_* names the mmdetection heads on "
                                f"any backbone; rows show the published COCO box and mask AP of the same recipe"),
        "--segmenter": dict(help=f"count the whole semantic segmenter on each backbone: {', '.join(SEGMENTERS)} "
                                 f"(upernet: mmseg's UperNet for ADE20K, PPM + FPN decode head, auxiliary FCN head in "
                                 f"training; sem_fpn: mmseg's semantic FPN, neck FPN + FPNHead); rows show the "
                                 f"published ADE20K mIoU of the same heads, and its recipe"),
        "--optimizer": dict(help=f"with a training step: whose fp32 state the training memory counts: "
                                 f"{', '.join(OPTIMIZERS)} (default sgd, with momentum)"),
        "--dtype": dict(help=f"{', '.join(DTYPE_NAMES)} (counting, and timing under autocast; default fp32, with "
                             f"--predict {PREDICT_DTYPE}: the tables the prediction is fitted on ran under autocast)"),
        "--device": dict(default="auto", help=f"where timing runs: {', '.join(DEVICES)} (default auto)"),
        "--threads": dict(help="CPU threads for timing, one number (default: all available cores)"),
        "--quick": dict(action="store_true", help="timing: short runs"),
        "--iters": dict(help="timing: at least this many timed steps (default 10, --quick 3); a p99 needs 100"),
        "--min-seconds": dict(help="timing: at least this many seconds of timed steps (default 1, --quick 0.3)"),
        "--channels-last": dict(action="store_true", help="timing: channels-last memory format"),
        "--compile": dict(nargs="?", const="default", default=None,
                          help=f"timing: torch.compile the model, with a mode ({', '.join(COMPILE_MODES)}; default "
                               f"'default')"),
        "--weights": dict(default="default", help="whose accuracy a row shows: default (timm's evaluation of the "
                                                  "checkpoint timm.create_model(..., pretrained=True) loads at that "
                                                  "size), paper (the authors' checkpoint), best (timm's most accurate "
                                                  "evaluated one)"),
        "--pretraining": dict(help=f"comma list of pretraining groups ({', '.join(PRETRAINING)}) the shown checkpoint "
                                   f"must be of (default: any)"),
        "--epochs": dict(help="with --predict and --metrics train: epochs of the schedule (with --train-images): "
                              "adds steps, wall hours and device hours"),
        "--train-images": dict(help="with --epochs: images per epoch (ImageNet-1k: 1281167)"),
        "--gpus": dict(default="1", help="with --epochs: data-parallel devices; --batch-sizes is the batch per device "
                                         "(the global batch is batch x K); adds the gradient all-reduce"),
        "--predict": dict(metavar="DEVICE[,DEVICE...]", help=f"measure nothing: the calibrated estimate on datasheet "
                                                            f"GPUs ({datasheet_devices()}), marked predicted, with its "
                                                            f"error band; several devices: the winner per model"),
        "--price-per-hour": dict(metavar="USD|DEVICE=USD,...", help=f"with --predict: each device's price per hour, "
                                 f"which you give (none is shipped), e.g. L4=0.8,A100=2.5,H100=4.5, or one number for "
                                 f"one device ({MIN_PRICE_PER_HOUR:g} to {MAX_PRICE_PER_HOUR:,.0f}): adds images per "
                                 f"dollar, and the winner is the most images per dollar"),
        "--reparam": dict(default="trained", help="with --predict: the form a re-parameterisable model (RepVGG, "
                                                  "MobileOne, FastViT, ...) is counted in: trained (as built, as "
                                                  "timm's benchmark.py runs by default) or fused (timm's "
                                                  "reparameterize_model, benchmark.py --reparam); default trained"),
        "--torch": dict(metavar="X.Y", default=None, help="with --predict: the torch release predicted, whose kernels "
                                                          "and defaults it runs (default: the installed one); "
                                                          "factors fitted on timm's tables of 1.10 to 2.9"),
        "--attention": dict(default=None, help="with --predict: fused (scaled_dot_product_attention's kernels) or "
                                               "unfused (q @ k^T, softmax, @ v as separate kernels, as code that "
                                               "writes its own attention runs); default: as --torch runs timm's "
                                               "models, fused from torch 2.0"),
        "--tf32": dict(default=None, help="with --predict --dtype fp32: on (convolutions and matmuls on TF32 tensor "
                                          "cores: torch.backends.cuda.matmul.allow_tf32 = True) or off (both fp32: "
                                          "torch.backends.cudnn.allow_tf32 = False); default PyTorch's own, cuDNN "
                                          "convolutions TF32 and matmuls fp32 (devices without TF32, V100 and T4: "
                                          "fp32)"),
        "--out": dict(default=None, help="folder whose results/ rows are appended to (and, with --resume or by "
                                         "zoo.select, reused from); default: the user data folder, $ARCHZOO_DATA_DIR "
                                         "or ~/.local/share/archzoo; --out . is the current folder"),
        "--no-save": dict(action="store_true", help="write nothing, only print"),
        "--no-cache": dict(action="store_true", help="neither read nor write the user cache of counts and GEMM peaks "
                                                     "(see $ARCHZOO_CACHE_DIR)"),
    }


def datasheet(name: str, option: str = "predict"):
    """The DeviceSheet a device typed on the command line names: the one place a name becomes a sheet
    (analysis.predict.devices.device_sheet), which is handed down from here; a UsageError (one line) otherwise."""
    from analysis.predict.devices import device_sheet

    try:
        return device_sheet(name.strip())
    except ValueError as e:
        raise UsageError(f"--{option}: {e}") from None


def torch_option(text: str | None) -> tuple[int, int] | None:
    """--torch X.Y -> (X, Y); None -> None (the installed release); a UsageError (one line) otherwise."""
    import re

    if text is None:
        return None
    found = re.fullmatch(r"([1-9])\.(\d{1,3})", text.strip())
    if not found:
        raise UsageError(f"--torch: {text!r} is not a torch release MAJOR.MINOR (e.g. 2.4)")
    return int(found[1]), int(found[2])


def attention_option(text: str | None) -> str | None:
    from .values import choice

    return None if text is None else choice(text, ("fused", "unfused"), "attention")


def predict_devices(text: str) -> list:
    """--predict "L4,A100,H100" -> their DeviceSheets, in the order given; a UsageError (one line) for an empty item,
    an unknown device or one named twice."""
    from .values import split_list

    sheets = []
    for item in split_list(text, "predict"):
        sheets.append(datasheet(item))
        if sheets.count(sheets[-1]) > 1:
            raise UsageError(f"--predict: {sheets[-1].name} is named twice")
    return sheets


def prices_per_hour(text: str, sheets: list) -> dict[str, float]:
    """--price-per-hour "L4=0.8,A100=2.5" (or one number when one device is predicted) -> {datasheet name: USD per
    hour}, one price for every device in `sheets` (predict_devices'); a UsageError (one line) otherwise: a price
    that is not a finite number within [MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR], a device not predicted, named
    twice, or left without a price."""
    from .values import DECIMAL_NUMBER, number, split_list

    devices = [s.name for s in sheets]

    def price(value: str, device: str) -> float:
        if not DECIMAL_NUMBER.fullmatch(value.strip()):
            number(value, "price-per-hour")          # its message: not a number
        usd = float(value)
        if not (math.isfinite(usd) and MIN_PRICE_PER_HOUR <= usd <= MAX_PRICE_PER_HOUR):
            raise UsageError(f"--price-per-hour: {device}'s {value.strip()} USD is outside {MIN_PRICE_PER_HOUR:g} to "
                             f"{MAX_PRICE_PER_HOUR:,.0f} USD per hour")
        return usd

    if "=" not in text:
        if len(devices) != 1:
            raise UsageError("--price-per-hour: one number prices one device; give DEVICE=USD for each of "
                             + ", ".join(devices))
        return {devices[0]: price(text, devices[0])}
    found: dict[str, float] = {}
    for item in split_list(text, "price-per-hour"):
        name, _, value = item.partition("=")
        device = datasheet(name, "price-per-hour").name
        if device not in devices:
            raise UsageError(f"--price-per-hour: {device} is not among --predict's devices ({', '.join(devices)})")
        if device in found:
            raise UsageError(f"--price-per-hour: {device} is priced twice")
        found[device] = price(value, device)
    missing = [d for d in devices if d not in found]
    if missing:
        raise UsageError(f"--price-per-hour: no price for {', '.join(missing)} (images per dollar compare every device)")
    return {d: found[d] for d in devices}


def add_options(parser: argparse.ArgumentParser, *names: str, **changed: dict) -> None:
    """Add the shared options `names` to a command's parser, in that order. `changed`: per option (its name
    without dashes, _ for -), the keywords a command sets otherwise, e.g. `predict=dict(help=...)`."""
    shared = _shared()
    for name in names:
        parser.add_argument(name, **{**shared[name], **changed.get(name.lstrip("-").replace("-", "_"), {})})


__all__ = ["BACKENDS", "COMPILE_MODES", "FORMATS", "OPTIMIZERS", "REPARAM_FORMS", "SELECT_FORMATS", "add_options",
           "datasheet", "datasheet_devices", "dtype_of", "predict_devices", "prices_per_hour", "pretraining_option", "weights_option"]


FROZEN_NEEDS_A_BACKBONE = ("--frozen-stages: applies to the backbone as detectors use it (--features or --detector) "
                           "or a segmenter (--segmenter)")


def check_heads(features: bool, frozen_stages: int | None, detector: str | None, segmenter: str | None) -> None:
    """The task heads' rules both commands share: one head at a time, a segmenter on the backbone's maps (not
    a feature extractor), --frozen-stages only on a backbone that a head or --features uses."""
    if detector and segmenter:
        raise UsageError("--detector and --segmenter: one task head at a time")
    if features and segmenter:
        raise UsageError("--segmenter counts the whole segmenter on the backbone's maps: drop --features")
    if frozen_stages is not None and not (features or detector or segmenter):
        raise UsageError(FROZEN_NEEDS_A_BACKBONE)


def check_timing(timing, backends, dtype: str, train: bool) -> None:
    """A Timing (zoo.runs.tasks) both commands time with: a known compile mode and backends, each backend able to
    time these options (it says itself why not: analysis.timing.backends). Eager times every setting, so it
    is not asked (the check would load torch)."""
    from .values import choice

    if timing.compile is not None:
        choice(timing.compile, COMPILE_MODES, "compile")
    for name in backends:
        choice(name, BACKENDS, "backend")
    others = [name for name in backends if name != "eager"]
    if not others:
        return
    from analysis.timing.backends import TimingSetting
    from analysis.timing.harness import backend_named

    setting = TimingSetting(device=timing.device if timing.device != "auto" else "cpu", dtype=dtype,
                            mode="train" if train else "inference", channels_last=timing.channels_last,
                            compile=timing.compile)
    for name in others:
        why = backend_named(name).unsupported(setting)
        if why:
            raise UsageError(f"--backend {name}: the backend {why}")


def timing_of(asked, backends, dtype: str, train: bool, local: bool = True):
    """The Timing both commands time with, from a Timing of the options as typed: its compile mode and backends
    checked (check_timing), the device resolved (zoo.options.values.check_device; with Ray, local=False, "auto"
    stays for the workers), threads, iters and min-seconds parsed. A UsageError (one line) before any work."""
    from .values import check_device, check_threads, number

    check_timing(asked, backends, dtype, train)
    return asked.replace(device=check_device(asked.device, local=local),
                         threads=check_threads(None if asked.threads is None else str(asked.threads)),
                         iters=None if asked.iters is None else number(asked.iters, "iters"),
                         min_seconds=None if asked.min_seconds is None else number(asked.min_seconds, "min-seconds"))
