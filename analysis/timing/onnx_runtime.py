"""The ONNX Runtime timing backend: the module exported to ONNX at the input's exact shape, `session.run` timed
by the one harness (analysis.timing.harness), with its own fields (OnnxDetails) beside the harness's.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from .backends import PreparedStep, TimingSetting, is_out_of_memory
from .fingerprint import package_version
from .result import OnnxDetails

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


def _findable(module: str) -> bool:
    """Whether `module` can be imported, without importing it (sys.modules[module] = None: not)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _import_onnxruntime():
    """onnxruntime, or None when it (or onnx, which both exporters write through) is not installed."""
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError:
        return None
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


def _providers(ort, device: str, providers: Optional[Sequence[str]]) -> tuple[list[str], Optional[str]]:
    """(the providers to ask for, or why none can be)."""
    available = ort.get_available_providers()
    if providers is not None:
        missing = [p for p in providers if p not in available]
        return list(providers), (f"lacks {', '.join(missing)} (onnxruntime {ort.__version__} has "
                                 f"{', '.join(available)})" if missing else None)
    if device == "cuda":
        return [CUDA_PROVIDER, CPU_PROVIDER], (None if CUDA_PROVIDER in available else
                                               f"has no {CUDA_PROVIDER} in onnxruntime {ort.__version__} "
                                               f"(install onnxruntime-gpu)")
    return [CPU_PROVIDER], None


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


@dataclass
class OnnxRuntimeBackend:
    """Export with torch's exporter, run `session.run` on ONNX Runtime; fp32 inference only.

    Exporter: torch.export-based (dynamo=True) by default: torch's default and maintained exporter
    since 2.9 (the TorchScript one warns it is deprecated), it fails on data-dependent control flow
    where the TorchScript tracer silently bakes in the branch it took, and both export vit_b16,
    deit_ti, swin_t and convnext_t at a fixed shape with outputs within 3e-6 of eager (checked on
    torch 2.14; the arguments used exist since torch 2.6). Its cost: export takes 2-15 s instead of
    1-6 s, and it needs onnxscript. exporter="torchscript" (dynamo=False) is the escape hatch.
    Correctness: eager and ORT outputs on the same random input (the timed one); they match when
    max |diff| <= tolerance x max |eager output| (1e-3 of the logits' scale by default). fp32 kernel
    reorderings give ~1e-6 of the scale; a wrong graph (a baked branch, a dropped op) gives errors of
    the scale's order, so 1e-3 separates the two with margin. A mismatch is recorded, not raised.
    Device "cuda" puts CUDAExecutionProvider first (OrtSessionError when the session fell back to CPU);
    `providers` overrides the list. Threads are ORT's intra-op threads (and torch's, for the export).
    The batch is baked into the graph: after out-of-memory the harness halves it and this exports again.
    NB: the module is moved to CPU and switched to eval. On CUDA every timed step includes copying the
    input to the GPU and the outputs back (session.run takes and returns host arrays), and the host
    clock times it (session.run returns only when done).
    """
    opset: int = DEFAULT_OPSET
    exporter: str = "dynamo"
    providers: Optional[Sequence[str]] = None
    tolerance: float = DEFAULT_TOLERANCE
    name = "onnxruntime"
    sees_dispatcher = False   # ORT picks its own kernels (and fusions): attn_path stays None

    def unsupported(self, setting: TimingSetting) -> Optional[str]:
        """The one place the onnxruntime restriction is stated (zoo.compare checks options through it)."""
        # NB: found, not imported: importing onnxruntime writes a device id under ~/.cache (see prepare)
        if not all(_findable(name) for name in ("onnx", "onnxruntime")):
            return 'needs ONNX Runtime, which is not installed (pip install "archzoo[onnx]")'
        if setting.mode != "inference" or setting.dtype != "fp32" or setting.channels_last or setting.compile:
            return "times fp32 inference only (no train metric, --dtype, --channels-last or --compile)"
        if self.exporter not in EXPORTERS:
            return f"has no exporter {self.exporter!r} (expected one of {', '.join(EXPORTERS)})"
        if self.providers is None and setting.device != "cuda":
            return None                    # the CPU provider is in every build
        if self.providers is None and package_version("onnxruntime-gpu") is None:
            return f"has no {CUDA_PROVIDER} (install onnxruntime-gpu)"
        return _providers(_import_onnxruntime(), setting.device, self.providers)[1]

    def prepare(self, model: nn.Module, images: torch.Tensor, setting: TimingSetting) -> PreparedStep:
        ort = _import_onnxruntime()
        providers = _providers(ort, setting.device, self.providers)[0]
        model = model.to("cpu").eval()
        images = images.cpu().contiguous()
        with torch.inference_mode():
            eager = _outputs(model(images))         # NB: may run out of memory: the harness halves the batch
        with tempfile.TemporaryDirectory(prefix="archzoo-onnx-", ignore_cleanup_errors=True) as folder:
            path = os.path.join(folder, "model.onnx")
            start = time.perf_counter()
            export_onnx(model, images, path, self.opset, self.exporter)
            export_seconds = time.perf_counter() - start
            session = _session(ort, path, torch.get_num_threads(), providers)
        # NB: the weights are in memory (or mapped) once the session exists; the files can go
        ran_providers = session.get_providers()
        if setting.device == "cuda" and self.providers is None and ran_providers[0] != CUDA_PROVIDER:
            raise OrtSessionError(f"onnxruntime fell back from {CUDA_PROVIDER} to {', '.join(ran_providers)}")
        feed = {session.get_inputs()[0].name: images.numpy()}
        try:
            first = session.run(None, feed)
        except Exception as exc:  # noqa: BLE001
            # ORT's exceptions derive from Exception, not RuntimeError; its allocators say these
            said = str(exc).lower()
            if is_out_of_memory(exc) or any(s in said for s in ("failed to allocate memory", "bad_alloc",
                                                                "out of memory")):
                # as torch says it, so the harness halves the batch
                raise torch.OutOfMemoryError(_ANSI.sub("", str(exc)).strip()) from exc
            raise OrtSessionError(f"onnxruntime could not run the model: {error_line(exc)}") from exc
        max_abs_diff, matches = _compare(eager, first, self.tolerance)
        details = OnnxDetails(self.exporter, self.opset, list(ran_providers), export_seconds, ort.__version__,
                              max_abs_diff, matches)
        # session.run is synchronous (host arrays in and out): the host clock times it on any provider
        ran_device = torch.device("cuda" if ran_providers[0] == CUDA_PROVIDER else "cpu")
        return PreparedStep(lambda: session.run(None, feed), ran_device, asdict(details), host_clock=True)
