"""A calibrated GPU time per batch: the roofline (analysis.predict.roofline) with achieved fractions of the datasheet
peak and bandwidth per kernel, per GPU architecture and per torch release, the host's time to issue the kernels,
and a band from leave-one-source-out error.

Each kernel i (analysis.count.traffic's kernel classes) of one batch takes
    count_i x ( max( flops_i / (e_i x P_i), bytes_i / (m_i x B) ) x v_i + launch )
and the batch the larger of their sum and the time the host takes to issue them, count x host (a smooth
maximum, p = 4: a small batch is host-bound, NVIDIA's batch-1 tables show it). P_i is the datasheet peak of the
precision the kernel runs in, as PyTorch runs it (kernel_precision: cuDNN convolutions take TF32 under fp32 by
default on Ampere and later, cuBLAS matmuls took it before torch 1.12 only, autocast runs both in the half dtype;
depthwise convolutions multiply on the fp32 CUDA cores whatever the dtype); B the datasheet bandwidth. The factors:
- GEMMs (matmul, conv, grouped_conv): e = ceiling(arch, cores) x x / (x + r_kind), x the kernel's intensity
  (flops / bytes) over the device's ridge point at that precision (P / B), r the x at which a GEMM of that kind
  reaches half its ceiling; the ceiling is what the cores reach (CUDA cores for fp32, tensor cores for TF32 and
  fp16/bf16): a fraction (a logit) per kind of core, times a factor per architecture shared by both kinds of core
  (a GPU that runs below, or boosts past, its datasheet clock does so on both) and one per architecture and
  precision (fp32, TF32, half), pulled toward 1 (a precision no source ran on that architecture takes its shared
  factor); factors, not logit offsets, so that a ceiling near 1 can still move (as logits on a ceiling fitted at
  0.997 they could not: they stayed within 0.01 of 0); cuDNN's convolutions take a factor of their own per
  precision (its algorithms: Winograd's fewer multiplies, or kernels below cuBLAS's);
- fused attention: ceiling(arch, precision) x a fitted fraction;
- depthwise convolutions: a fraction of the fp32 CUDA-core peak per library (PyTorch's conv_depthwise2d, or cuDNN:
  channels-last, or fp16 NCHW with filters up to 5 x 5) and filter size (k3, k5, k7), times an architecture factor;
- memory: a fraction of the bandwidth per kind (and memory format), times an architecture factor (a logit offset);
- v: the torch release's factor on the kernel's group (gemm, depthwise, attention, norm, other), 1 at REFERENCE.
An architecture no fitted source ran takes the shared factors (its own are absent). The factors are fitted once on
published tables (benchmarks/fit_gpu_calibration.py, analysis.predict.fit), never per model.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from importlib import resources

SERIAL = "serial"           # a kernel whose threads loop (analysis.count.traffic.serial_steps): steps, not FLOPs
GEMMS = ("matmul", "conv", "grouped_conv")
CONV_KINDS = ("conv", "grouped_conv")                # cuDNN's: a factor on the ceiling of their own
PRECISIONS = ("fp32", "tf32", "half")                # cuDNN's convolutions: a factor per kind and precision
CORES = ("cuda", "tensor")                           # a GEMM's ceiling: fp32 on CUDA cores, tf32 and half on tensor
MEMORY_KINDS = ("matmul", "conv", "conv_nhwc", "grouped_conv", "grouped_conv_nhwc", "depthwise_conv",
                "depthwise_conv_nhwc", "attention", "norm", "elementwise", "data_movement", SERIAL)
RIDGE_KINDS = ("matmul", "conv", "conv_nhwc", "grouped_conv", "grouped_conv_nhwc")
DEPTHWISE = tuple(f"{lib}/k{k}" for lib in ("native", "cudnn") for k in (3, 5, 7))
GROUPS = ("gemm", "depthwise", "attention", "norm", "other")
VERSIONS = ((1, 10), (1, 11), (1, 12), (1, 13), (2, 1), (2, 4), (2, 9))   # the releases timm's tables measured
REFERENCE = (2, 4)
HOST_SMOOTHING = 4.0
TF32_MODES = ("on", "off")


def version_of(text: str) -> tuple[int, int]:
    """"2.4.1+cu124" -> (2, 4)."""
    major, minor = text.split("+")[0].split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def release(torch: tuple[int, int]) -> tuple[int, int]:
    """The fitted release whose factors a torch version takes: the latest of VERSIONS not after it (the first for
    an earlier one: an extrapolation, said on the row)."""
    return max((v for v in VERSIONS if v <= torch), default=VERSIONS[0])


def op_precisions(dtype: str, has_tf32: bool, tf32: str | None = None, torch: tuple[int, int] = REFERENCE) -> dict:
    """{"conv": precision, "matmul": precision} as PyTorch runs `dtype`: under autocast (bf16/fp16) both the half
    dtype; under fp32 that torch's defaults (tf32 None: torch.backends.cudnn.allow_tf32 True, so cuDNN runs TF32;
    torch.backends.cuda.matmul.allow_tf32 True before 1.12, False since), or both TF32 ("on") or both fp32 ("off").
    A device without TF32 tensor cores (V100, T4) runs fp32."""
    if tf32 is not None and tf32 not in TF32_MODES:
        raise ValueError(f"tf32: {tf32!r}; one of {', '.join(TF32_MODES)}")
    if dtype != "fp32":
        return {"conv": dtype, "matmul": dtype}
    matmul_default = "on" if torch < (1, 12) else "off"
    conv = "tf32" if has_tf32 and tf32 != "off" else "fp32"
    matmul = "tf32" if has_tf32 and (tf32 or matmul_default) == "on" else "fp32"
    return {"conv": conv, "matmul": matmul}


@dataclass(frozen=True)
class Setting:
    """What runs: on which sheet (analysis.predict.devices.DeviceSheet), in which dtype (autocast for bf16/fp16),
    TF32 as asked (None: the torch version's defaults), which memory format, under which torch release."""
    sheet: object
    dtype: str
    tf32: str | None = None
    channels_last: bool = False
    torch: tuple[int, int] = REFERENCE
    harness: str | None = None      # a published table's own loop (its source), whose time per batch was fitted

    @functools.cached_property
    def precisions(self) -> dict:
        return op_precisions(self.dtype, "tf32" in self.sheet.peak_flops, self.tf32, self.torch)


@dataclass(frozen=True)
class Kernel:
    """One kernel class as the factors read it (kernel_of)."""
    kind: str                  # matmul, conv, grouped_conv, depthwise_conv, attention, norm, elementwise, ...
    column: str | None         # the datasheet's peak column it runs at (None: no FLOPs that bound it)
    ceiling: str | None        # fp32 / tf32 / half: the ceiling a GEMM or attention kernel reaches
    ridge: str | None          # RIDGE_KINDS entry of a GEMM
    depthwise: str | None      # DEPTHWISE entry
    memory: str                # MEMORY_KINDS entry
    group: str                 # GROUPS entry (the torch release's factor)


def kernel_of(op_class: str, setting: Setting) -> Kernel:
    """How a kernel class runs in the setting (the module docstring's rules)."""
    if op_class.startswith("depthwise_conv"):
        k = int(op_class[-1]) if op_class[-2:-1] == "k" else 3
        cudnn = setting.channels_last or (setting.dtype == "fp16" and k <= 5)
        nhwc = "_nhwc" if setting.channels_last else ""
        return Kernel("depthwise_conv", "fp32", None, None, f"{'cudnn' if cudnn else 'native'}/k{k}",
                      f"depthwise_conv{nhwc}", "depthwise")
    if op_class in GEMMS or op_class == "attention":
        library = "matmul" if op_class in ("matmul", "attention") else "conv"
        column = setting.precisions[library]
        nhwc = "_nhwc" if setting.channels_last and library == "conv" else ""
        return Kernel(op_class, column, "half" if column in ("fp16", "bf16") else column,
                      None if op_class == "attention" else op_class + nhwc, None, op_class + nhwc,
                      "attention" if op_class == "attention" else "gemm")
    group = "norm" if op_class == "norm" else "other"
    return Kernel(op_class, None, None, None, None, op_class if op_class in MEMORY_KINDS else "elementwise", group)


def class_peaks(ops, setting: Setting) -> dict[str, float]:
    """The datasheet peak each kernel class of `ops` runs at in the setting, for the roofline bound: its column's
    (kernel_of), the fp32 CUDA-core peak for the rest (inf on a sheet without one: TPU v3), inf for a serial
    kernel (its "flops" are steps)."""
    peaks = setting.sheet.peak_flops
    out = {}
    for op_class, *_ in ops:
        column = kernel_of(op_class, setting).column or "fp32"
        out[op_class] = math.inf if op_class == SERIAL else peaks.get(column, math.inf)
    return out


def cores(precision: str) -> str:
    """Which cores a GEMM of this precision runs on: its ceiling's (tf32 and half share the tensor cores')."""
    return "cuda" if precision == "fp32" else "tensor"


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@dataclass(frozen=True)
class Calibration:
    """The fitted factors, in the unconstrained form the fit moves them in (analysis.predict.fit): fractions as
    logits, times and ratios as logs; `arch`: per architecture, the log factors of its GEMM ceiling (all
    precisions, and per precision), the logit offsets of its depthwise and memory fractions (absent: the shared
    ones). `bands`: per band kind, (p10, p90) of measured / expected
    img/s over leave-one-source-out predictions, and what it is. `extra`: provenance and held-out statistics."""
    params: dict
    arch: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)
    source: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"params": self.params, "arch": self.arch, "bands": self.bands, "source": self.source, **self.extra}

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        known = ("params", "arch", "bands", "source")
        return cls(data["params"], data.get("arch", {}), data.get("bands", {}), data.get("source", ""),
                   {k: v for k, v in data.items() if k not in known})

    def fitted(self, architecture: str) -> bool:
        return architecture in self.arch

    def version_factor(self, torch: tuple[int, int], group: str) -> float:
        return math.exp(self.params["version"].get(".".join(map(str, release(torch))), {}).get(group, 0.0))

    def efficiencies(self, kernel: Kernel, architecture: str) -> tuple[float, float]:
        """(compute, memory) fractions of the kernel on the architecture (compute: of its column's peak, before
        a GEMM's ridge term)."""
        p, own = self.params, self.arch.get(architecture, {})
        if kernel.ceiling is not None:
            compute = sigmoid(p["ceiling"][cores(kernel.ceiling)]) * math.exp(
                own.get("ceiling", 0.0) + own.get("precision", {}).get(kernel.ceiling, 0.0))
            if kernel.kind == "attention":
                compute *= sigmoid(p["attention"])
            elif kernel.kind in CONV_KINDS:      # cuDNN's algorithms (Winograd, FFT) may do fewer multiplies
                compute *= math.exp(p["conv_ceiling"][kernel.kind][kernel.ceiling])
        elif kernel.depthwise is not None:
            compute = sigmoid(p["depthwise"][kernel.depthwise] + own.get("depthwise", 0.0))
        else:
            compute = 1.0
        return compute, sigmoid(p["memory"][kernel.memory] + own.get("memory", 0.0))


def kernel_seconds(flops: float, nbytes: float, kernel: Kernel, setting: Setting, cal: Calibration) -> float:
    """One kernel's expected time without the launch term; a serial kernel's `flops` are its steps per thread."""
    sheet = setting.sheet
    compute_eff, memory_eff = cal.efficiencies(kernel, sheet.architecture)
    memory = nbytes / (memory_eff * sheet.mem_bandwidth)
    if kernel.kind == SERIAL:
        compute = flops * math.exp(cal.params["serial_step"])
    elif kernel.column is None or kernel.column not in sheet.peak_flops or not flops:
        compute = 0.0               # elementwise work, or a sheet without that column (TPU v3: no fp32)
    else:
        peak = sheet.peak_flops[kernel.column]
        if kernel.ridge is not None and nbytes:
            x = (flops / nbytes) / (peak / sheet.mem_bandwidth)
            compute_eff *= x / (x + math.exp(cal.params["ridge"][kernel.ridge]))
        compute = flops / (compute_eff * peak)
    return max(compute, memory) * cal.version_factor(setting.torch, kernel.group)


def host_seconds(kernels: int, setting: Setting, cal: Calibration) -> float:
    """The host's time to issue a batch's kernels: a time per kernel (more under autocast, which dispatches each
    op through its casts), plus, for a published table's own harness (setting.harness), the time its loop took per
    batch (NVIDIA's: data loading and synchronisation; fitted per source, never part of a user's prediction)."""
    p = cal.params
    per_kernel = math.exp(p["host"]) * (1 + (math.exp(p["host_autocast"]) if setting.dtype != "fp32" else 0.0))
    harness = p.get("harness", {}).get(setting.harness) if setting.harness else None
    return (math.exp(harness) if harness is not None else 0.0) + per_kernel * kernels


def expected_seconds(ops, setting: Setting, cal: Calibration) -> float:
    """ops: (op_class, flops, bytes, count) of one batch -> expected seconds per batch in the setting."""
    launch = math.exp(cal.params["launch"])
    gpu = sum(n * (kernel_seconds(f, b, kernel_of(c, setting), setting, cal) + launch) for c, f, b, n in ops)
    host = host_seconds(sum(n for *_, n in ops), setting, cal)
    return (gpu ** HOST_SMOOTHING + host ** HOST_SMOOTHING) ** (1 / HOST_SMOOTHING)


def band(cal: Calibration, architecture: str) -> tuple[tuple[float, float], str]:
    """The held-out band a row on a device of this architecture carries, and what it is."""
    kind = "fitted" if cal.fitted(architecture) else "unfitted"
    low, high, why = cal.bands[kind]
    return (low, high), why


@functools.cache
def shipped() -> Calibration:
    """The factors shipped in analysis/predict/data/gpu_calibration.json (benchmarks/fit_gpu_calibration.py)."""
    text = resources.files(__package__).joinpath("data", "gpu_calibration.json").read_text(encoding="utf-8")
    return Calibration.from_json(json.loads(text))


def quantile(values: list[float], q: float, weights: list[float] | None = None) -> float:
    """The q-quantile of a non-empty list: linear interpolation (numpy's default) or, with weights, the weighted
    quantile (the smallest value whose cumulative weight reaches q of the total)."""
    if weights is not None:
        pairs = sorted(zip(values, weights))
        total, running = sum(weights), 0.0
        for value, weight in pairs:
            running += weight
            if running >= q * total:
                return value
        return pairs[-1][0]
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    def ranks(x):
        order = sorted(range(len(x)), key=x.__getitem__)
        r = [0.0] * len(x)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
