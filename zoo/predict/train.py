"""zoo.compare --predict DEVICE --metrics train: one training step of a request on a datasheet GPU (forward,
backward and the optimizer step, counted on meta as the GPU runs them) with its calibrated time and held-out
band, its memory (analysis.predict.memory), and with --epochs / --train-images / --gpus the hours and dollars to
train (analysis.predict.schedule). Printed, never written to results/.

The step's kernels: the forward and backward under torch.autocast (fp32 weights, analysis.count.autocast) with
CUDA's fused SDPA and its backward kernel, the task's loss (cross-entropy), the gradients' accumulation, and
the optimizer really stepped on meta: torch.optim's zero_grad() and step(), per parameter (for-loop) or over
all of them at once (foreach, torch 2.x's default on CUDA). Each kernel is timed with the calibration fitted on
timm's published training benchmark (benchmarks/fit_train_calibration.py: analysis/predict/data/gpu_train_calibration.json).

A TPU chip (TPU v3) is an EXTRAPOLATION: no published TPU table exists to fit, so its step is the same counted
step timed by the GPU-fitted factors on the chip's datasheet roofline (bf16 peak, HBM bandwidth), with attention
written op by op (XLA computes it as einsums and a softmax; it has no fused attention kernel) and the GPU table's
band. Not modelled: XLA's fusion of elementwise chains into their neighbours (fewer bytes than PyTorch's eager
kernels move), its own memory planning (whether the step fits is left open) and the input pipeline.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from importlib import resources

import torch

from analysis.predict.calibration import Calibration, class_peaks, expected_seconds, op_precisions
from analysis.count.cost import GpuEmulation, image_batch, run_train_step
from analysis.predict.devices import device_sheet
from analysis.vocab import DTYPES

from ..runs.request import Request
from analysis.predict.memory import task_loss

# timm's benchmark.py TrainBenchmarkRunner (huggingface/pytorch-image-models@c865028): create_optimizer_v2(opt='sgd',
# lr=1e-4) = torch.optim.SGD(momentum=0.9, nesterov=True), no weight decay; the detection and segmentation
# recipes train with AdamW (weight decay 0.05 as ConvNeXt's and Swin's configs)
OPTIMIZERS = {
    "sgd": lambda params, foreach: torch.optim.SGD(params, lr=1e-4, momentum=0.9, nesterov=True, foreach=foreach),
    "adamw": lambda params, foreach: torch.optim.AdamW(params, lr=1e-4, weight_decay=0.05, foreach=foreach),
}


def train_step_ops(request: Request, foreach: bool = True, fused_attention: bool = True
                   ) -> list[tuple[str, int, int, int]]:
    """(op_class, FLOPs, bytes, count) of one training step of the request's batch (module docstring), its
    optimizer the request's (None: timm's benchmark's SGD). fused_attention=False: attention written op by op,
    as timm and torch 1.12 ran it when the published training table was measured (no SDPA before torch 2.0)."""
    from ..runs.gpu_memory import _module

    module = _module(request, fused_attention)
    x = image_batch(module, request.batch_size, request.img_size)
    make = OPTIMIZERS[request.optimizer or "sgd"]
    emulation = GpuEmulation(None if request.dtype == "fp32" else DTYPES[request.dtype])
    counter, _, _ = run_train_step(module, x, gpu=emulation, loss=task_loss(request), traffic=True,
                                   optimizer=lambda params: make(params, foreach))
    return counter.traffic.op_list()


@functools.cache
def train_calibration() -> Calibration:
    """The shipped factors (analysis/predict/data/gpu_train_calibration.json, from benchmarks/fit_train_calibration.py),
    with one borrowed: the fused SDPA kernels' compute efficiency. The training table ran attention op by op
    (its q @ k^T and @ v are GEMMs, its softmax the attention class), so it says nothing about the fused kernels
    torch 2.x runs; their efficiency is the inference calibration's (fitted on fused SDPA forwards,
    analysis/predict/data/gpu_calibration.json). NB: that the fused backward runs as efficiently is unvalidated."""
    from .inference import gpu_calibration

    text = resources.files("analysis.predict").joinpath("data", "gpu_train_calibration.json").read_text(encoding="utf-8")
    cal = Calibration.from_json(json.loads(text))
    fused = gpu_calibration().compute_efficiency["attention"]
    return dataclasses.replace(cal, compute_efficiency={**cal.compute_efficiency, "attention": fused})


def step_seconds(ops, device: str, dtype: str, cal: Calibration | None = None) -> float:
    """Expected seconds of one step on the datasheet device (the peak of the dtype for tensor-core classes)."""
    sheet = device_sheet(device)
    cal = cal or train_calibration()
    peaks = class_peaks(sheet.peak_flops, op_precisions(dtype, "tf32" in sheet.peak_flops),
                        depthwise_on_cuda_cores=cal.ridge_factor is not None)     # legacy: fitted at the library's
    return expected_seconds(ops, peaks, sheet.mem_bandwidth, cal)


def predict_train(request: Request, device: str, foreach: bool = True, gpus: int = 1) -> dict:
    """The training fields of a predicted row: images per second (expectation and band), the step time, the
    step's memory and whether it fits the device (on more than one GPU with DistributedDataParallel's gradient
    buckets, analysis.predict.memory)."""
    from ..runs.gpu_memory import gpu_train_bytes

    sheet, cal = device_sheet(device), train_calibration()
    tpu = sheet.kind == "tpu"
    seconds = step_seconds(train_step_ops(request, foreach, fused_attention=not tpu), device, request.dtype, cal)
    rate = request.batch_size / seconds
    measured_here = sheet.name in cal.extra.get("calibrated_devices", ())
    low, high = cal.band if measured_here or not cal.extra.get("band_other_device") else cal.extra["band_other_device"]
    memory = gpu_train_bytes(request.replace(optimizer=request.optimizer or "sgd"), foreach=foreach,
                             data_parallel=gpus > 1)
    band_from = (cal.extra.get("band_from", "") if measured_here else
                 "leave one family out on the one fitted table; this device was not measured, and one table cannot "
                 "give the wider band across devices")
    if tpu:
        band_from = ("EXTRAPOLATION to a TPU: the GPU-fitted factors on the chip's datasheet roofline, attention op by "
                     "op, XLA's fusion not modelled; the band is the GPU table's " + band_from.split(";")[0])
    fits = None if tpu else sheet.memory_bytes is None or memory["train_bytes"] <= sheet.memory_bytes
    return {"train_imgs_per_s": rate, "train_imgs_per_s_p10": rate * low, "train_imgs_per_s_p90": rate * high,
            "train_step_ms": seconds * 1e3, "train_optimizer": memory["optimizer"],
            "train_optimizer_impl": "foreach" if foreach else "for-loop",
            "train_device_kind": sheet.kind, "train_attention": "op by op" if tpu else "fused SDPA",
            "train_gpu_bytes": memory["train_bytes"], "device_memory_bytes": sheet.memory_bytes,
            "train_fits_memory": fits, "train_band_from": band_from, "train_calibration_source": cal.source}


def train_rows(plan, args) -> list[dict]:
    """One predicted training row per model, size and batch of the plan."""
    from analysis.predict.schedule import allreduce_seconds, schedule

    named = args.predict[0] if isinstance(args.predict, list) else args.predict   # compare: predict_devices' list
    device = device_sheet(named.strip()).name
    price = args.price_per_hour.get(device) if isinstance(args.price_per_hour, dict) else args.price_per_hour
    seen, rows = set(), []
    for task in plan.tasks:
        request = task.request.replace(train=True)
        key = (request.model, request.img_size, request.batch_size)
        if key in seen:
            continue
        seen.add(key)
        h, w = request.img_size.hw
        row = {"predicted": True, "device": device, "model": request.model, "img_h": h, "img_w": w,
               "batch_size": request.batch_size, "dtype": request.dtype,
               **predict_train(request, device, gpus=int(args.gpus))}
        if request.detector or request.segmenter:
            row["task"] = request.detector or request.segmenter
        if args.epochs is not None:
            low, high = row["train_imgs_per_s_p10"] / row["train_imgs_per_s"], \
                row["train_imgs_per_s_p90"] / row["train_imgs_per_s"]
            grad_bytes = 4 * _trainable(request)
            row.update(schedule(row["train_step_ms"] / 1e3, (low, high), request.batch_size, args.epochs,
                                args.train_images, args.gpus, allreduce_seconds(grad_bytes, args.gpus, device),
                                price))
            sheet = device_sheet(device)
            if sheet.kind == "tpu":                      # the unit TPU papers report: cores x days
                row.update({f"train_core_days{end}": row[f"train_device_hours{end}"] * sheet.cores_per_chip / 24
                            for end in ("", "_fast", "_slow")})
        rows.append(row)
    return rows


def _trainable(request: Request) -> int:
    from ..runs.gpu_memory import _module

    return sum(p.numel() for p in _module(request).parameters() if p.requires_grad)


def train_markdown(rows: list[dict]) -> str:
    from .rows import model_label

    first = rows[0]
    tpu = first.get("train_device_kind") == "tpu"
    unit = "chip" if tpu else "GPU"
    lines = [f"PREDICTED, not measured: a training step on {first['device']} ({first['dtype']}"
             + (" autocast" if first["dtype"] != "fp32" else "") + f", {first['train_optimizer']}, "
             f"{first['train_optimizer_impl']}), forward + backward + optimizer step, expected img/s with its "
             f"p10-p90 band ({first['train_band_from']}). Calibration: {first['train_calibration_source']}", ""]
    hours = "train_steps" in first
    price = "train_usd" in first
    head = f"| model | size (px) | batch / {unit} | train img/s (p10-p90) | ms / step | train GiB | fits |"
    rule = "|---|---|---:|---:|---:|---:|---|"
    if hours:
        head += f" steps | all-reduce ms | wall hours (band) | {unit}-hours (band) |"
        rule += "---:|---:|---:|---:|"
    if "train_core_days" in first:
        head += " TPU core-days (band) |"
        rule += "---:|"
    if price:
        head += " USD (band) |"
        rule += "---:|"
    lines += [head, rule]
    for r in rows:
        line = (f"| {model_label(r)} | {r['img_h']}x{r['img_w']} | {r['batch_size']} | {r['train_imgs_per_s']:.4g} "
                f"({r['train_imgs_per_s_p10']:.4g}-{r['train_imgs_per_s_p90']:.4g}) | {r['train_step_ms']:.4g} | "
                f"{r['train_gpu_bytes'] / 1024 ** 3:.2f} | {_fits(r['train_fits_memory'])} |")
        if hours:
            line += (f" {r['train_steps']:,} | {r['train_allreduce_ms']:.3g} | {r['train_wall_hours']:.4g} "
                     f"({r['train_wall_hours_fast']:.4g}-{r['train_wall_hours_slow']:.4g}) | "
                     f"{r['train_device_hours']:.4g} ({r['train_device_hours_fast']:.4g}-"
                     f"{r['train_device_hours_slow']:.4g}) |")
        if "train_core_days" in r:
            line += f" {r['train_core_days']:.4g} ({r['train_core_days_fast']:.4g}-{r['train_core_days_slow']:.4g}) |"
        if price:
            line += f" {r['train_usd']:,.0f} ({r['train_usd_fast']:,.0f}-{r['train_usd_slow']:,.0f}) |"
        lines.append(line)
    if hours:
        lines += ["", f"{first['gpus']} {unit}{'s' if first['gpus'] > 1 else ''}, global batch {first['train_global_batch']}; the all-reduce (ring, "
                      "2(K-1)/K x fp32 gradient bytes at the link's per-direction datasheet bandwidth) is added to "
                      "each step, not overlapped with the backward (overlapped, the wall hours would be "
                      + ", ".join(f"{r['train_wall_hours_overlapped']:.4g}" for r in rows) + ")"]
    return "\n".join(lines) + "\n"


def _fits(fits: bool | None) -> str:
    """'yes', 'NO', or '-' where it is not modelled (a TPU: XLA plans its own memory)."""
    return "-" if fits is None else "yes" if fits else "NO"


def print_train_predictions(plan, args) -> int:
    import sys

    rows = train_rows(plan, args)
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif rows:
        sys.stdout.write(train_markdown(rows))
    return 0
