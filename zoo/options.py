"""The words and options zoo.compare and zoo.select share, defined once: output formats, timing backends, compile
modes, optimizers, the one parser of --pretraining and of --weights (zoo.models.accuracy's, as the Python API takes
them too), and every option both commands take (`add_options`), with the same name, help and default."""
from __future__ import annotations

import argparse

from analysis.vocab import DEVICES, DTYPE_NAMES

from .models.accuracy import pretraining_option, weights_option
from .models.cards import PRETRAINING

FORMATS = ("table", "markdown", "csv", "json")              # zoo.compare's stdout
SELECT_FORMATS = tuple(f for f in FORMATS if f != "csv")    # zoo.select's: a shortlist with its reasons is no CSV
BACKENDS = ("eager", "onnxruntime")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
OPTIMIZERS = ("sgd", "adamw")       # whose fp32 state a training step's memory counts (zoo.runs.counted)
DATASHEET_DEVICES = ("H100, H200, A100, 'A100 40GB', 'V100 SXM2', 'V100 PCIe', L4, T4, 'RTX 3090', 'RTX 4090', "
                     "'RTX 5090'")


def _shared() -> dict[str, dict]:
    """Option -> argparse keywords; built on first use (the detector and segmenter names come from their specs)."""
    from .models.detectors.specs import DETECTOR_NAMES
    from .models.segmenters.specs import SEGMENTERS

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
        "--dtype": dict(default="fp32", help=f"{', '.join(DTYPE_NAMES)} (counting, and timing under autocast; "
                                             f"default fp32)"),
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
        "--predict": dict(metavar="DEVICE", help=f"measure nothing: the roofline estimate on a datasheet GPU "
                                                 f"({DATASHEET_DEVICES}), marked predicted, with its error band"),
        "--out": dict(default=None, help="folder whose results/ rows are appended to (and, with --resume or by "
                                         "zoo.select, reused from); default: the user data folder, $ARCHZOO_DATA_DIR "
                                         "or ~/.local/share/archzoo; --out . is the current folder"),
        "--no-save": dict(action="store_true", help="write nothing, only print"),
        "--no-cache": dict(action="store_true", help="neither read nor write the user cache of counts and GEMM peaks "
                                                     "(see $ARCHZOO_CACHE_DIR)"),
    }


def add_options(parser: argparse.ArgumentParser, *names: str, **changed: dict) -> None:
    """Add the shared options `names` to a command's parser, in that order. `changed`: per option (its name
    without dashes, _ for -), the keywords a command sets otherwise, e.g. `predict=dict(help=...)`."""
    shared = _shared()
    for name in names:
        parser.add_argument(name, **{**shared[name], **changed.get(name.lstrip("-").replace("-", "_"), {})})


__all__ = ["BACKENDS", "COMPILE_MODES", "FORMATS", "OPTIMIZERS", "SELECT_FORMATS", "add_options", "pretraining_option",
           "weights_option"]
