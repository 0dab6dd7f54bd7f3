"""zoo.compare --predict DEVICE --metrics train: one training step of a request on a datasheet GPU (forward,
backward and the optimizer step, counted on meta as the GPU runs them) with its calibrated time and held-out
band, its memory (analysis.predict.memory), and with a schedule (epochs, images, GPUs) the hours and dollars to
train (analysis.predict.schedule). A row as zoo.predict.inference's, the identity fields first; never written to
results/.

The step's kernels: the forward and backward under torch.autocast (fp32 weights, analysis.count.autocast) with
CUDA's fused SDPA and its backward kernel, the task's loss (cross-entropy), the gradients' accumulation, and
the optimizer really stepped on meta: torch.optim's zero_grad() and step(), per parameter (for-loop) or over
all of them at once (foreach, torch 2.x's default on CUDA). Each kernel is timed with the one calibration, fitted on
published inference and training tables alike (analysis/predict/data/gpu_calibration.json).

A TPU chip (TPU v3) is an EXTRAPOLATION: no published TPU table exists to fit, so its step is the same counted
step timed by the GPU-fitted factors on the chip's datasheet roofline (bf16 peak, HBM bandwidth), with attention
written op by op (XLA computes it as einsums and a softmax; it has no fused attention kernel) and the band of an
architecture no fitted source ran. Not modelled: XLA's fusion of elementwise chains into their neighbours (fewer bytes than PyTorch's eager
kernels move), its own memory planning (whether the step fits is left open) and the input pipeline.
"""
from __future__ import annotations

import torch

from analysis.count.cost import GpuEmulation, image_batch, run_train_step
from analysis.predict.calibration import Calibration, Setting, expected_seconds, shipped
from analysis.predict.devices import DeviceSheet
from analysis.predict.memory import task_loss
from analysis.predict.schedule import allreduce_seconds, schedule
from analysis.vocab import DTYPES

from ..runs.request import Request
from .rows import countable, identity

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
    with countable(request):                     # past int64 sizes: rows.TooLarge, naming the request
        counter, _, _ = run_train_step(module, x, gpu=emulation, loss=task_loss(request), traffic=True,
                                       optimizer=lambda params: make(params, foreach))
    return counter.traffic.op_list()


def step_seconds(ops, setting: Setting, cal: Calibration | None = None) -> float:
    """Expected seconds of one step in the setting (analysis.predict.calibration: one calibration for inference
    and training, fitted on both)."""
    return expected_seconds(ops, setting, cal or shipped())


def predict_train(request: Request, sheet: DeviceSheet, gpus: int = 1, epochs: float | None = None,
                  train_images: int | None = None, price_per_hour: float | None = None,
                  torch: tuple[int, int] | None = None, attention: str | None = None) -> dict:
    """The predicted training row: images per second (expectation and band), the step time, the step's memory and
    whether it fits the device (on more than one GPU with DistributedDataParallel's gradient buckets,
    analysis.predict.memory); with epochs and train_images the schedule's steps, hours (and dollars at the price
    given) on `gpus` devices (analysis.predict.schedule; a TPU's also in core-days). The optimizer steps as the
    torch release does on CUDA: foreach (all parameters at once) from 2.0, parameter by parameter before."""
    from ..runs.gpu_memory import gpu_train_bytes

    from .inference import band_text, setting_of
    from .versions import attention_of, torch_label

    request, cal, tpu = request.replace(train=True), shipped(), sheet.kind == "tpu"
    setting = setting_of(request, sheet, torch=torch)
    attention = "unfused" if tpu else attention_of(setting.torch, attention)
    foreach = setting.torch >= (2, 0)
    seconds = step_seconds(train_step_ops(request, foreach, fused_attention=attention == "fused"), setting, cal)
    rate = request.batch_size / seconds
    (low, high), band_from = band_text(cal, sheet)
    with countable(request):
        memory = gpu_train_bytes(request.replace(optimizer=request.optimizer or "sgd"), foreach=foreach,
                                 data_parallel=gpus > 1)
    if tpu:
        band_from = ("EXTRAPOLATION to a TPU: the GPU-fitted factors on the chip's datasheet roofline, attention op by "
                     "op, XLA's fusion not modelled; " + band_from)
    fits = None if tpu else sheet.memory_bytes is None or memory["train_bytes"] <= sheet.memory_bytes
    row = {**identity(request, sheet), "train_imgs_per_s": rate, "train_imgs_per_s_p10": rate * low,
           "train_imgs_per_s_p90": rate * high, "train_step_ms": seconds * 1e3, "train_optimizer": memory["optimizer"],
           "train_optimizer_impl": "foreach" if foreach else "for-loop",
           "train_device_kind": sheet.kind, "train_attention": "fused SDPA" if attention == "fused" else "op by op",
           "torch": torch_label(setting.torch), "architecture": sheet.architecture,
           "train_gpu_bytes": memory["train_bytes"], "device_memory_bytes": sheet.memory_bytes,
           "train_fits_memory": fits, "train_band_from": band_from, "train_calibration_source": cal.source}
    if epochs is not None:
        grad_bytes = 4 * memory["trainable_params"]
        row.update(schedule(seconds, (low, high), request.batch_size, epochs, train_images, gpus,
                            allreduce_seconds(grad_bytes, gpus, sheet), price_per_hour))
        if tpu:                      # the unit TPU papers report: cores x days
            row.update({f"train_core_days{end}": row[f"train_device_hours{end}"] * sheet.cores_per_chip / 24
                        for end in ("", "_fast", "_slow")})
    return row
