"""Throughput and latency of a module as deployed: exported to ONNX and run by ONNX Runtime.

One record per call, with the eager harness's fields (analysis.timing.harness) plus the ONNX ones.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import time
import warnings
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from .contention import ForeignCpuMeter
from .fingerprint import available_cores, environment_fingerprint
from .harness import is_out_of_memory, mfu_fields, throughput_fields
from .latency import DEFAULT_PROTOCOL, TimingProtocol, timed_loop
from .steps import random_input

# NB: 18 is the dynamo exporter's own opset (onnxscript's torchlib targets it; other opsets go through
# the ONNX version converter), the TorchScript exporter supports it too, and onnxruntime runs it.
DEFAULT_OPSET = 18
EXPORTERS = ("dynamo", "torchscript")
DEFAULT_TOLERANCE = 1e-3
CPU_PROVIDER, CUDA_PROVIDER = "CPUExecutionProvider", "CUDAExecutionProvider"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class OnnxBackendError(RuntimeError):
    """The model could not be measured under ONNX Runtime; the message is one line."""


class OnnxExportError(OnnxBackendError):
    """torch.onnx.export failed."""


class OrtSessionError(OnnxBackendError):
    """ONNX Runtime could not load or run the exported model."""


def _import_onnxruntime():
    try:
        import onnx  # noqa: F401 -- both exporters write through it
        import onnxruntime
    except ImportError as exc:
        raise ImportError(f"ONNX Runtime timing needs onnx and onnxruntime (pip install 'archzoo[onnx]'): {exc}") from exc
    return onnxruntime


def error_line(exc: BaseException, limit: int = 240) -> str:
    """'Outer <- Root: first line of the root cause's message', without colour codes or stacks.

    The dynamo exporter wraps the real error (e.g. GuardOnDataDependentSymNode) in a TorchExportError
    whose first line is generic, so the innermost cause gives the line.
    """
    root, seen = exc, {id(exc)}
    while True:
        nxt = root.__cause__ or (None if root.__suppress_context__ else root.__context__)
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        root = nxt
    lines = [line.strip() for line in _ANSI.sub("", str(root)).splitlines() if line.strip()]
    names = type(exc).__name__ if root is exc else f"{type(exc).__name__} <- {type(root).__name__}"
    text = f"{names}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_ort_out_of_memory(exc: BaseException) -> bool:
    # ORT's exceptions derive from Exception, not RuntimeError; its allocators say these
    message = str(exc).lower()
    return is_out_of_memory(exc) or any(s in message for s in ("failed to allocate memory", "bad_alloc",
                                                                "out of memory"))


def export_onnx(model: nn.Module, images: torch.Tensor, path: str, opset: int = DEFAULT_OPSET,
                exporter: str = "dynamo") -> None:
    """Write `model` at `images`' exact (static) shape to `path`; any failure is an OnnxExportError (one line).

    NB: the exporters' progress prints and warnings (TracerWarning, the TorchScript exporter's
    DeprecationWarning) are silenced; the error, if any, is kept.
    """
    if exporter not in EXPORTERS:
        raise ValueError(f"exporter must be one of {EXPORTERS}, got {exporter!r}")
    options = dict(opset_version=opset, input_names=["images"], verbose=False)
    if exporter == "dynamo":
        # external data: weights beside the graph, so models over protobuf's 2 GB limit export too
        options.update(dynamo=True, external_data=True, optimize=True)
    else:
        options.update(dynamo=False, do_constant_folding=True)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (images,), path, **options)
    except Exception as exc:  # noqa: BLE001 -- every exporter failure becomes one line
        raise OnnxExportError(f"{exporter} exporter, opset {opset}: {error_line(exc)}") from exc


def _providers(ort, device: str, providers: Optional[Sequence[str]]) -> list[str]:
    available = ort.get_available_providers()
    if providers is not None:
        missing = [p for p in providers if p not in available]
        if missing:
            raise ValueError(f"onnxruntime {ort.__version__} lacks {', '.join(missing)}; it has {', '.join(available)}")
        return list(providers)
    if device not in ("cpu", "cuda", "auto"):
        raise ValueError(f"device must be cpu, cuda or auto, got {device!r}")
    if device == "cuda" and CUDA_PROVIDER not in available:
        raise ValueError(f"device 'cuda': onnxruntime {ort.__version__} has no {CUDA_PROVIDER} "
                         f"(install onnxruntime-gpu)")
    if device != "cpu" and CUDA_PROVIDER in available:
        return [CUDA_PROVIDER, CPU_PROVIDER]
    return [CPU_PROVIDER]


def _session(ort, path: str, threads: int, providers: list[str]):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no "provider fell back" chatter (the record says it)
    try:
        return ort.InferenceSession(path, sess_options=options, providers=providers)
    except Exception as exc:  # noqa: BLE001
        raise OrtSessionError(f"onnxruntime could not load the model: {error_line(exc)}") from exc


def _outputs(value) -> list[np.ndarray]:
    if isinstance(value, torch.Tensor):
        return [value.detach().float().numpy()]
    if isinstance(value, (list, tuple)):
        return [array for item in value for array in _outputs(item)]
    if isinstance(value, dict):
        return [array for item in value.values() for array in _outputs(item)]
    return []


def _compare(eager: list[np.ndarray], onnx: list, tolerance: float) -> tuple[Optional[float], bool]:
    """(max |onnx - eager| over all outputs, or None when the shapes differ; whether within tolerance x scale)."""
    scale = max((float(np.abs(e).max()) for e in eager if e.size), default=0.0)
    atol = tolerance * max(scale, 1e-6)
    if len(eager) != len(onnx) or any(e.shape != np.shape(o) for e, o in zip(eager, onnx)):
        return None, False
    diff = max((float(np.abs(np.asarray(o, dtype=np.float64) - e).max()) for e, o in zip(eager, onnx) if e.size),
               default=0.0)
    return diff, bool(diff <= atol)  # NaN compares False: a NaN output never matches


def measure_onnxruntime(
    model: nn.Module,
    img_size: int | tuple[int, int] = 224,
    batch_size: int = 1,
    protocol: TimingProtocol = DEFAULT_PROTOCOL,
    threads: Optional[int] = None,
    macs: Optional[int] = None,
    peak: Optional[dict] = None,
    opset: Optional[int] = None,
    providers: Optional[Sequence[str]] = None,
    tolerance: float = DEFAULT_TOLERANCE,
    device: str = "cpu",
    dtype: str = "fp32",
    exporter: str = "dynamo",
    in_chans: int = 3,
) -> dict:
    """Export `model` at (batch_size, in_chans, H, W), time `session.run` under ONNX Runtime, return one record.

    The record has measure_throughput's fields (same timed_loop, protocol and statistics; backend=
    "onnxruntime", attn_path None) plus onnx_opset, onnx_providers (those the session really got),
    export_seconds, onnxruntime_version, onnx_max_abs_diff and onnx_matches_eager.

    Exporter: torch.export-based (dynamo=True) by default: torch's default and maintained exporter
    since 2.9 (the TorchScript one warns it is deprecated), it fails on data-dependent control flow
    where the TorchScript tracer silently bakes in the branch it took, and both export vit_b16,
    deit_ti, swin_t and convnext_t at a fixed shape with outputs within 3e-6 of eager (checked on
    torch 2.14; the arguments used exist since torch 2.6). Its cost: export takes 2-15 s instead of
    1-6 s, and it needs onnxscript. exporter="torchscript" (dynamo=False) is the escape hatch.
    opset: DEFAULT_OPSET (18) when None.
    Correctness: eager and ORT outputs on the same random input (the timed one); they match when
    max |diff| <= tolerance x max |eager output| (atol 1e-3 of the logits' scale by default). fp32
    kernel reorderings give ~1e-6 of the scale; a wrong graph (a baked branch, a dropped op) gives
    errors of the scale's order, so 1e-3 separates the two with margin. A mismatch is recorded, not raised.
    device: "cpu" (default) runs on CPUExecutionProvider; "cuda" puts CUDAExecutionProvider first
    (ValueError when this onnxruntime lacks it, OrtSessionError when the session fell back to CPU);
    "auto" uses CUDA where listed. `providers` overrides that list. threads: ORT intra-op threads
    (and torch's, for export and the eager reference), default every available core.
    Out of memory while running gives a record without timings (error set), like the harness at batch 1;
    there is no halving: the batch is baked into the exported graph.
    Raises ValueError for a dtype other than fp32 (autocast has no ONNX equivalent here), OnnxExportError /
    OrtSessionError (one-line message) when the model cannot be exported, loaded or run.
    NB: the module is moved to CPU and switched to eval. On CUDA, every timed step includes copying
    the input to the GPU and the outputs back (session.run takes and returns host arrays), and the
    host clock times it (session.run returns only when done).
    """
    if dtype != "fp32":
        raise ValueError(f"ONNX Runtime timing is fp32 only, got dtype {dtype!r}")
    ort = _import_onnxruntime()
    opset = DEFAULT_OPSET if opset is None else opset
    threads = threads if threads is not None else available_cores()
    session_providers = _providers(ort, device, providers)
    cpu = torch.device("cpu")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = model.to(cpu).eval()
        images = random_input(batch_size, img_size, cpu, False, in_chans)
        try:
            with torch.inference_mode():
                eager = _outputs(model(images))
        except Exception as exc:  # noqa: BLE001 -- the eager reference itself may not fit
            if not is_out_of_memory(exc):
                raise
            return _oom_record(exc, batch_size, protocol, threads, opset, session_providers, ort, macs, peak, cpu)
        with tempfile.TemporaryDirectory(prefix="archzoo-onnx-", ignore_cleanup_errors=True) as folder:
            path = os.path.join(folder, "model.onnx")
            start = time.perf_counter()
            export_onnx(model, images, path, opset, exporter)
            export_seconds = time.perf_counter() - start
            session = _session(ort, path, threads, session_providers)
        # NB: the weights are in memory (or mapped) once the session exists; the files can go
        ran_providers = session.get_providers()
        if device == "cuda" and providers is None and ran_providers[0] != CUDA_PROVIDER:
            raise OrtSessionError(f"onnxruntime fell back from {CUDA_PROVIDER} to {', '.join(ran_providers)}")
        ran_device = torch.device("cuda" if ran_providers[0] == CUDA_PROVIDER else "cpu")
        feed = {session.get_inputs()[0].name: images.numpy()}

        def step():
            return session.run(None, feed)

        try:
            first = step()
        except Exception as exc:  # noqa: BLE001
            if _is_ort_out_of_memory(exc):
                return _oom_record(exc, batch_size, protocol, threads, opset, ran_providers, ort, macs, peak,
                                   ran_device, export_seconds)
            raise OrtSessionError(f"onnxruntime could not run the model: {error_line(exc)}") from exc
        max_abs_diff, matches = _compare(eager, first, tolerance)
        # session.run is synchronous (host arrays in and out): the host clock times it on any provider
        with ForeignCpuMeter() as foreign_cpu:
            run = timed_loop(step, cpu, protocol)
        record = _record(run, batch_size, None, [], protocol, threads, foreign_cpu.share, ran_device)
        record.update(_onnx_fields(opset, ran_providers, ort, export_seconds, max_abs_diff, matches),
                      onnx_exporter=exporter)
        record.update(mfu_fields(macs, record["imgs_per_s"], peak, ran_device, "fp32", threads, "inference"))
        record["env"] = environment_fingerprint(ran_device)
        return record
    finally:
        torch.set_num_threads(previous_threads)


def _record(run, batch_size, error, oom_batch_sizes, protocol, threads, foreign_share, device) -> dict:
    """The harness's record layout (same keys, same order), for an ONNX Runtime timing."""
    return {
        "backend": "onnxruntime",
        "mode": "inference",
        "requested_batch_size": batch_size,
        "ran_batch_size": batch_size if run is not None else None,
        "error": error,
        "oom_batch_sizes": oom_batch_sizes,
        **throughput_fields(run, batch_size if run is not None else None),
        "device": str(device),
        "dtype": "fp32",
        "threads": threads,  # ORT intra-op threads
        "channels_last": False,
        "compile": False,
        "warmup": protocol.warmup,
        "min_iters": protocol.min_iters,
        "min_seconds": protocol.min_seconds,
        "foreign_cpu_share": foreign_share,
        "attn_path": None,  # NB: ORT picks its own kernels (and fusions); the dispatcher cannot see them
    }


def _onnx_fields(opset, providers, ort, export_seconds, max_abs_diff=None, matches=None) -> dict:
    # NB: exactly the fields zoo.runs.schema knows (its rows refuse unknown ones)
    return {"onnx_opset": opset, "onnx_providers": list(providers), "export_seconds": export_seconds,
            "onnxruntime_version": ort.__version__, "onnx_max_abs_diff": max_abs_diff,
            "onnx_matches_eager": matches}


def _oom_record(exc, batch_size, protocol, threads, opset, providers, ort, macs, peak, device,
                export_seconds=None) -> dict:
    first_line = (_ANSI.sub("", str(exc)).strip().splitlines() or [""])[0]
    error = f"{type(exc).__name__} at batch_size={batch_size}: {first_line}"  # the harness's format
    record = _record(None, batch_size, error, [batch_size], protocol, threads, None, device)
    record.update(_onnx_fields(opset, providers, ort, export_seconds))
    record.update(mfu_fields(macs, None, peak, device, "fp32", threads, "inference"))
    record["env"] = environment_fingerprint(device)
    return record
