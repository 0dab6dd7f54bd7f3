"""One forward of a request predicted on a datasheet device (`zoo.compare --predict`, `zoo.select --predict`,
zoo.report's committed rows): counted on meta as the GPU runs it (analysis.count.autocast: autocast's casts, fused
attention, the reparameterised inference form), bounded by analysis.predict.roofline, its expectation and band
analysis.predict.calibration's with the shipped factors. The device comes as its DeviceSheet, resolved where the
command line was read.

Predicted rows are never measured rows: they carry `predicted: true` and the device's name, and only zoo.report
--refresh commits a fixed set beside the results (results/predicted.jsonl, zoo.report.gpu_predictions), never into
cost.jsonl or throughput.jsonl.
"""
from __future__ import annotations

from analysis.count.cost import GpuEmulation, image_batch, run_forward, weight_bytes
from analysis.predict.calibration import Calibration, class_peaks, expected_seconds, in_memory_format, op_precisions, \
    shipped
from analysis.predict.devices import DeviceSheet, sheet_peak
from analysis.predict.roofline import ROOFLINE_FIELDS, roofline
from analysis.vocab import DTYPES

from ..errors import UsageError
from ..runs.request import Request
from .rows import PredictedRow, identity
from .schema import FP32_CAVEAT



def gpu_forward(request: Request, gpu: bool = True, reparam: str = "fused") -> dict:
    """One counted forward: its op list ((op_class, FLOPs, bytes, count) of the batch) and the memory serving the
    batch needs (weights as held, the activation peak, the input). With `gpu`, what a CUDA GPU runs: its fused SDPA
    kernels, and for bf16/fp16 torch.autocast over fp32 weights and input (timm's benchmark --amp), casts included
    (analysis.count.autocast); with reparam "fused" the model is in its inference form where it has
    one (timm's reparameterize_model: RepVGG's branches fused into one conv), as timm's benchmark --reparam runs it
    (its published GMACs are of that form); "trained" keeps the form as built, as benchmark.py runs without
    --reparam. "reparam" in the result names the form counted, None for a model with one form only. The module
    is the one the count and the timing build (zoo.runs.module_build), so a detector's roofline is the whole
    detector's."""
    from ..runs.module_build import build

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


def precisions(sheet: DeviceSheet, dtype: str, tf32: str | None = None) -> dict[str, str]:
    """{"conv", "matmul"} precisions `dtype` runs in on the device (analysis.predict.calibration.op_precisions);
    tf32: "on", "off" or None (PyTorch's defaults)."""
    return op_precisions(dtype, "tf32" in sheet.peak_flops, tf32)


def band_for(cal: Calibration, device: str, channels_last: bool) -> tuple[tuple[float, float], str]:
    """The held-out band a row on `device` (a sheet's name) carries, and what it is."""
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
    if "band_channels_last" not in shipped("inference").extra:
        raise UsageError("--predict: channels-last is not modelled (no channels-last factors are fitted); "
                         "drop --channels-last")


def predict(request: Request, sheet: DeviceSheet, tf32: str | None = None, price_per_hour: float | None = None,
            channels_last: bool = False, reparam: str = "fused", counted: dict | None = None) -> PredictedRow:
    """One forward of `request` on the device: the calibrated expectation (imgs_per_s, latency_ms) with its held-out
    p10-p90 band, the roofline bound, serving memory. tf32: None (PyTorch's defaults: cuDNN convolutions TF32,
    matmuls fp32), "on" or "off"; reparam: the form counted (gpu_forward); counted: that forward already counted
    (gpu_forward), so one count serves every device (zoo.predict.decision, zoo.report's committed rows)."""
    dtype, batch_size = request.dtype, request.batch_size
    sheet_peak(sheet, dtype)                   # a dtype the device has no path for fails before counting
    if channels_last:
        check_channels_last()
    counted = counted or gpu_forward(request, reparam=reparam)
    runs_in = precisions(sheet, dtype, tf32)
    peaks = class_peaks(sheet.peak_flops, runs_in)
    peak = sheet.peak_flops[runs_in["matmul"]]
    estimate = roofline(counted["ops"], peak, sheet.mem_bandwidth, sheet.launch_seconds, peaks=peaks)
    cal = shipped("inference")
    seconds = expected_seconds(in_memory_format(counted["ops"], channels_last), peaks, sheet.mem_bandwidth, cal)
    rate = batch_size / seconds
    (low, high), band_from = band_for(cal, sheet.name, channels_last)
    row = {**identity(request, sheet), "img_size": request.img_size.side, "features": request.features,
           "memory_format": "channels_last" if channels_last else "contiguous",
           "conv_precision": runs_in["conv"], "matmul_precision": runs_in["matmul"], "peak_flops": peak,
           "conv_peak_flops": sheet.peak_flops[runs_in["conv"]], "mem_bandwidth": sheet.mem_bandwidth,
           "launch_us": sheet.launch_seconds * 1e6, **{k: estimate[k] for k in ROOFLINE_FIELDS},
           "imgs_per_s": rate, "imgs_per_s_p10": rate * low, "imgs_per_s_p90": rate * high,
           "band_from": band_from + (FP32_CAVEAT if dtype == "fp32" else ""),
           "latency_ms": seconds * 1e3, "roofline_imgs_per_s": batch_size / estimate["roofline_ms"] * 1e3,
           "serve_bytes": counted["serve_bytes"], "device_memory_bytes": sheet.memory_bytes,
           "fits_memory": sheet.memory_bytes is None or counted["serve_bytes"] <= sheet.memory_bytes,
           "roofline_ms_by_op_class": estimate["roofline_ms_by_op_class"],
           "source": "; ".join((*sheet.sources, *(f"derived: {d}" for d in sheet.derived))),
           "calibration_source": cal.source, "reparam": counted.get("reparam")}
    if price_per_hour is not None:
        row.update(price_per_hour_usd=price_per_hour, imgs_per_usd=rate * 3600 / price_per_hour)
    return PredictedRow.of(row)


def check_predict(sheet: DeviceSheet, dtype: str, tf32: str | None = None, train: bool = False) -> None:
    """--predict: a tensor-core path for the dtype on the device, and --tf32 only with fp32 (UsageError, exit 2).
    A TPU takes the training prediction only (train=True): the inference calibration models CUDA's kernels (fused
    SDPA, cuDNN), which a TPU does not run."""
    try:
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
