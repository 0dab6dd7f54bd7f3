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
from analysis.predict.calibration import Setting, band, class_peaks, expected_seconds, shipped
from analysis.predict.devices import DeviceSheet, sheet_peak
from analysis.predict.roofline import ROOFLINE_FIELDS, roofline
from analysis.vocab import DTYPES

from ..errors import UsageError
from ..runs.request import Request
from .rows import PredictedRow, countable, identity



def gpu_forward(request: Request, gpu: bool = True, reparam: str = "fused", fused_attention: bool = True) -> dict:
    """One counted forward: its op list ((op_class, FLOPs, bytes, count) of the batch) and the memory serving the
    batch needs (weights as held, the activation peak, the input). With `gpu`, what a CUDA GPU runs: its fused SDPA
    kernels, and for bf16/fp16 torch.autocast over fp32 weights and input (timm's benchmark --amp), casts included
    (analysis.count.autocast); with reparam "fused" the model is in its inference form where it has
    one (timm's reparameterize_model: RepVGG's branches fused into one conv), as timm's benchmark --reparam runs it
    (its published GMACs are of that form); "trained" keeps the form as built, as benchmark.py runs without
    --reparam. "reparam" in the result names the form counted, None for a model with one form only. The module
    is the one the count and the timing build (zoo.runs.module_build), so a detector's roofline is the whole
    detector's. fused_attention=False: attention written op by op (q @ k^T, softmax, @ v), as torch before 2.0 ran
    every model and as code that runs its own attention does (--attention unfused)."""
    from ..runs.gpu_memory import _module
    from ..runs.module_build import build

    dtype, img_size = request.dtype, request.img_size
    held = "fp32" if gpu else dtype
    module = _module(request, fused_attention) if gpu else build(request, "meta", held)
    two_forms = gpu and any(hasattr(m, "reparameterize") or hasattr(m, "fuse") for m in module.modules())
    if two_forms and reparam == "fused":
        import torch
        from timm.utils.model import reparameterize_model

        with torch.device("meta"):       # the fused kernels are made where the weights are
            module = reparameterize_model(module)
    emulation = GpuEmulation(None if dtype == "fp32" else DTYPES[dtype]) if gpu else None
    x = image_batch(module, request.batch_size, img_size, DTYPES[held])
    with countable(request):                     # past int64 sizes: rows.TooLarge, naming the request
        counter, memory, _ = run_forward(module, x, traffic=True, gpu=emulation)
    serve = weight_bytes(module) + memory.peak_bytes + x.numel() * x.element_size()
    return {"ops": counter.traffic.op_list(), "serve_bytes": serve, "reparam": reparam if two_forms else None}


def setting_of(request: Request, sheet: DeviceSheet, tf32: str | None = None, channels_last: bool = False,
               torch: tuple[int, int] | None = None) -> Setting:
    """What the request runs as on the device: its dtype, TF32 as asked, the memory format, the torch release
    (None: the installed one, zoo.predict.versions)."""
    from .versions import installed

    return Setting(sheet, request.dtype, tf32, channels_last, torch or installed())


def band_text(cal, sheet: DeviceSheet) -> tuple[tuple[float, float], str]:
    """The held-out band a row on the device carries, and what it is; said when the device's architecture has no
    fitted source."""
    (low, high), why = band(cal, sheet.architecture)
    if not cal.fitted(sheet.architecture):
        what = "chip" if sheet.kind == "tpu" else "GPU"
        why = f"no fitted source ran a {sheet.architecture} {what}: the shared factors; " + why
    return (low, high), why


def predict(request: Request, sheet: DeviceSheet, tf32: str | None = None, price_per_hour: float | None = None,
            channels_last: bool = False, counted: dict | None = None, torch: tuple[int, int] | None = None,
            attention: str | None = None) -> PredictedRow:
    """One forward of `request` on the device: the calibrated expectation (imgs_per_s, latency_ms) with its held-out
    p10-p90 band, the roofline bound, serving memory. tf32: None (the torch release's defaults), "on" or "off";
    torch: the release whose kernels are predicted (None: the installed one); attention: "fused" (SDPA, torch 2.0
    on) or "unfused" (op by op: torch before 2.0, or code that writes its own); None: as that release runs timm's
    models; counted: that forward already counted (gpu_forward: the form counted, its attention), so one count
    serves every device (zoo.predict.decision, zoo.report's committed rows); None: counted here, in the inference
    form (reparam "fused")."""
    from .versions import attention_of, torch_label

    dtype, batch_size = request.dtype, request.batch_size
    sheet_peak(sheet, dtype)                   # a dtype the device has no path for fails before counting
    setting = setting_of(request, sheet, tf32, channels_last, torch)
    attention = attention_of(setting.torch, attention)
    counted = counted or gpu_forward(request, fused_attention=attention == "fused")
    runs_in = setting.precisions
    peak = sheet.peak_flops[runs_in["matmul"]]
    estimate = roofline(counted["ops"], peak, sheet.mem_bandwidth, sheet.launch_seconds,
                        peaks=class_peaks(counted["ops"], setting))
    cal = shipped()
    seconds = expected_seconds(counted["ops"], setting, cal)
    rate = batch_size / seconds
    (low, high), band_from = band_text(cal, sheet)
    row = {**identity(request, sheet), "img_size": request.img_size.side, "features": request.features,
           "memory_format": "channels_last" if channels_last else "contiguous",
           "conv_precision": runs_in["conv"], "matmul_precision": runs_in["matmul"], "peak_flops": peak,
           "conv_peak_flops": sheet.peak_flops[runs_in["conv"]], "mem_bandwidth": sheet.mem_bandwidth,
           "launch_us": sheet.launch_seconds * 1e6, **{k: estimate[k] for k in ROOFLINE_FIELDS},
           "imgs_per_s": rate, "imgs_per_s_p10": rate * low, "imgs_per_s_p90": rate * high,
           "band_from": band_from, "latency_ms": seconds * 1e3,
           "roofline_imgs_per_s": batch_size / estimate["roofline_ms"] * 1e3,
           "serve_bytes": counted["serve_bytes"], "device_memory_bytes": sheet.memory_bytes,
           "fits_memory": sheet.memory_bytes is None or counted["serve_bytes"] <= sheet.memory_bytes,
           "roofline_ms_by_op_class": estimate["roofline_ms_by_op_class"],
           "source": "; ".join((*sheet.sources, *(f"derived: {d}" for d in sheet.derived))),
           "calibration_source": cal.source, "torch": torch_label(setting.torch), "attention": attention,
           "architecture": sheet.architecture, "reparam": counted.get("reparam")}
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
