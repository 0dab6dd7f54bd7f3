"""Roofline estimates for the zoo's models: beside a timed row (this machine's measured GEMM peak and
memory bandwidth), or predicted for a datasheet device that is not here (`zoo.compare --predict`).

Predicted rows are never measured rows: they carry `predicted: true` and the device's name; zoo.compare
prints them (zoo.predict.rows), and only zoo.report --refresh commits a fixed set beside the results
(results/predicted.jsonl, zoo.report.gpu_predictions), never into cost.jsonl or throughput.jsonl. A prediction counts what the GPU runs
(analysis.count.autocast: autocast's casts, fused attention, the reparameterised inference form); its
bound is analysis.predict.roofline's, its expectation and band analysis.predict.calibration's with the shipped factors.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from analysis.predict.calibration import Calibration, class_peaks, expected_seconds, in_memory_format, op_precisions
from analysis.count.cost import GpuEmulation, image_batch, run_forward, weight_bytes
from analysis.predict.roofline import CPU_LAUNCH_SECONDS, GPU_LAUNCH_SECONDS, roofline
from analysis.predict.devices import device_sheet, sheet_peak
from analysis.vocab import DTYPES, resolve_device

from ..errors import UsageError
from .schema import FP32_CAVEAT
from ..runs.request import Request

ROOFLINE_FIELDS = ("roofline_ms", "roofline_compute_share", "roofline_memory_share", "roofline_launch_share")


def traffic_ops(request: Request, gpu: bool = False) -> list[tuple[str, int, int, int]]:
    """(op_class, FLOPs, bytes, count) of one eager forward of the request's batch, counted on meta. With `gpu`,
    what a CUDA GPU runs: its fused SDPA kernels, and for bf16/fp16 torch.autocast over fp32 weights and input
    (timm's benchmark --amp), casts included (analysis.count.autocast). The module is the one the request
    measures (zoo.runs.counted.build), a whole detector or segmenter included."""
    return gpu_forward(request, gpu)["ops"]


def gpu_forward(request: Request, gpu: bool = True, reparam: str = "fused") -> dict:
    """One counted forward: its op list and the memory serving the batch needs (weights as held, the
    activation peak, the input), for traffic_ops and predictions. With `gpu` and reparam "fused" the model is
    in its inference form where it has one (timm's reparameterize_model: RepVGG's branches fused into one
    conv), as timm's benchmark --reparam runs it (its published GMACs are of that form); "trained" keeps the
    form as built, as benchmark.py runs without --reparam. "reparam" in the result names the form counted,
    None for a model with one form only. The module is the one the count and the timing build
    (zoo.runs.counted.build), so a detector's roofline is the whole detector's."""
    from ..runs.counted import build

    dtype, img_size = request.dtype, request.img_size
    held = "fp32" if gpu else dtype
    module = build(request, "meta", held)
    two_forms = gpu and any(hasattr(m, "reparameterize") or hasattr(m, "fuse") for m in module.modules())
    if two_forms and reparam == "fused":
        import torch
        from timm.utils.model import reparameterize_model

        with torch.device("meta"):       # the fused kernels are made where the weights are
            module = reparameterize_model(module)
    emulation = GpuEmulation(None if dtype == "fp32" else DTYPES[dtype]) if gpu else None
    x = image_batch(module, request.batch_size, img_size, DTYPES[held])
    counter, memory, _ = run_forward(module, x, traffic=True, gpu=emulation)
    serve = weight_bytes(module) + memory.peak_bytes + x.numel() * x.element_size()
    return {"ops": counter.traffic.op_list(), "serve_bytes": serve, "reparam": reparam if two_forms else None}


def measured_roofline(task, record: dict, peak: dict | None) -> dict:
    """Roofline fields of a timed eager inference row (`task`: a zoo.runs.tasks.Task) from this machine's
    peak and bandwidth (in `peak`, zoo.runs.peaks); none for training steps, ONNX Runtime, or a peak
    without a bandwidth."""
    if not peak or "mem_bandwidth" not in peak or task.request.train or task.timing.backend != "eager":
        return {}
    batch = record.get("ran_batch_size") or task.request.batch_size
    launch = GPU_LAUNCH_SECONDS if resolve_device(task.timing.device).type == "cuda" else CPU_LAUNCH_SECONDS
    from ..runs.counted import count_of      # the cost row's count when it is at this batch: no build

    estimate = roofline(count_of(task.request.replace(batch_size=batch)).ops, peak["peak_flops"],
                        peak["mem_bandwidth"], launch)
    return {"mem_bandwidth": peak["mem_bandwidth"], **{k: estimate[k] for k in ROOFLINE_FIELDS}}


@functools.cache
def gpu_calibration() -> Calibration:
    """The shipped factors (analysis/predict/data/gpu_calibration.json, fitted by benchmarks/fit_gpu_calibration.py)."""
    text = resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text(encoding="utf-8")
    return Calibration.from_json(json.loads(text))


def _tf32_mode(tf32) -> str | None:
    """--tf32 on|off, or None for PyTorch's defaults (a bool is taken as on/off)."""
    return {True: "on", False: "off"}.get(tf32, tf32) if isinstance(tf32, bool) else tf32


def precisions(device: str, dtype: str, tf32=None) -> dict[str, str]:
    """{"conv", "matmul"} precisions `dtype` runs in on `device` (analysis.predict.calibration.op_precisions)."""
    return op_precisions(dtype, "tf32" in device_sheet(device).peak_flops, _tf32_mode(tf32))


def predict(request: Request, device: str, tf32=None, price_per_hour: float | None = None,
            channels_last: bool = False, reparam: str = "fused") -> dict:
    """One forward of `request` on a datasheet device (analysis.predict.devices), counted as the GPU runs it: the
    calibrated expectation (imgs_per_s, latency_ms) with its held-out p10-p90 band, the roofline bound, serving
    memory. tf32: None (PyTorch's defaults: cuDNN convolutions TF32, matmuls fp32), "on" or "off"; reparam: the form
    counted (gpu_forward)."""
    sheet_peak(device_sheet(device), request.dtype)          # an unknown device or dtype fails before counting
    return predict_counted(gpu_forward(request, reparam=reparam), request, device, tf32, price_per_hour, channels_last)


def band_for(cal: Calibration, device: str, channels_last: bool) -> tuple[tuple[float, float], str]:
    """The held-out band a row on `device` carries, and what it is."""
    extra = cal.extra
    if channels_last:
        low, high = extra["band_channels_last"]
        if device in extra.get("channels_last_devices", ()):
            return (low, high), "leave one family out on this device's channels-last table"
        other = extra.get("band_other_device") or cal.band
        return ((min(low, other[0]), max(high, other[1])),
                "the wider of the channels-last table's leave-one-family-out band and the "
                "leave-one-device-and-family-out band (no channels-last table of this device was fitted)")
    if device in extra.get("calibrated_devices", ()) or not extra.get("band_other_device"):
        return cal.band, "leave one family out on this device's table"
    return tuple(extra["band_other_device"]), ("leave one device and one family out (no published table of this "
                                                "device was fitted)")


def check_channels_last() -> None:
    """--predict --channels-last: refused in one line where the shipped factors have no channels-last fit."""
    if "band_channels_last" not in gpu_calibration().extra:
        raise UsageError("--predict: channels-last is not modelled (no channels-last factors are fitted); "
                         "drop --channels-last")


def predict_counted(counted: dict, request: Request, device: str, tf32=None,
                    price_per_hour: float | None = None, channels_last: bool = False) -> dict:
    """predict() from a forward gpu_forward already counted for `request`: one count serves every device
    (zoo.report's committed predictions)."""
    model, batch_size, dtype = request.model, request.batch_size, request.dtype
    sheet = device_sheet(device)
    sheet_peak(sheet, dtype)
    runs_in = precisions(device, dtype, tf32)
    peaks = class_peaks(sheet.peak_flops, runs_in)
    peak = sheet.peak_flops[runs_in["matmul"]]
    estimate = roofline(counted["ops"], peak, sheet.mem_bandwidth, sheet.launch_seconds, peaks=peaks)
    cal = gpu_calibration()
    if channels_last:
        check_channels_last()
    seconds = expected_seconds(in_memory_format(counted["ops"], channels_last), peaks, sheet.mem_bandwidth, cal)
    rate = batch_size / seconds
    (low, high), band_from = band_for(cal, sheet.name, channels_last)
    if dtype == "fp32":
        band_from += FP32_CAVEAT
    h, w = request.img_size.hw
    row = {"predicted": True, "device": sheet.name, "model": model, "img_h": h, "img_w": w,
           "img_size": request.img_size.side, "batch_size": batch_size, "dtype": dtype, "features": request.features,
           "memory_format": "channels_last" if channels_last else "contiguous",
           "conv_precision": runs_in["conv"], "matmul_precision": runs_in["matmul"],
           "peak_flops": peak, "conv_peak_flops": sheet.peak_flops[runs_in["conv"]], "mem_bandwidth": sheet.mem_bandwidth, "launch_us": sheet.launch_seconds * 1e6,
           **{k: estimate[k] for k in ROOFLINE_FIELDS},
           "imgs_per_s": rate, "imgs_per_s_p10": rate * low, "imgs_per_s_p90": rate * high,
           "band_from": band_from,
           "latency_ms": seconds * 1e3, "roofline_imgs_per_s": batch_size / estimate["roofline_ms"] * 1e3,
           "serve_bytes": counted["serve_bytes"], "device_memory_bytes": sheet.memory_bytes,
           "fits_memory": sheet.memory_bytes is None or counted["serve_bytes"] <= sheet.memory_bytes,
           "roofline_ms_by_op_class": estimate["roofline_ms_by_op_class"], "source": "; ".join((*sheet.sources, *(f"derived: {d}" for d in sheet.derived))),
           "calibration_source": cal.source}
    if price_per_hour is not None:
        row["price_per_hour_usd"] = price_per_hour
        row["imgs_per_usd"] = rate * 3600 / price_per_hour
    if counted.get("reparam"):
        row["reparam"] = counted["reparam"]
    if request.detector or request.segmenter:
        row["task"] = request.detector or request.segmenter
    return row


def check_predict(device: str, dtype: str, tf32: str | None = None, train: bool = False) -> None:
    """--predict: a device with a datasheet, a tensor-core path for the dtype, and --tf32 only with fp32
    (UsageError, exit 2). A TPU takes the training prediction only (train=True): the inference calibration
    models CUDA's kernels (fused SDPA, cuDNN), which a TPU does not run."""
    try:
        sheet = device_sheet(device)
        sheet_peak(sheet, dtype)
    except ValueError as e:
        raise UsageError(f"--predict: {e}") from None
    if sheet.kind == "tpu" and not train:
        raise UsageError(f"--predict: {sheet.name} is a TPU: only its training step is predicted (--metrics train), "
                         f"not inference")
    if tf32 is not None:
        if tf32 not in ("on", "off"):
            raise UsageError(f"--tf32: {tf32!r}; on or off")
        if dtype != "fp32":
            raise UsageError(f"--tf32: only with --dtype fp32 (under {dtype} autocast convs and matmuls run in {dtype})")
