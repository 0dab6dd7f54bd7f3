"""Fitting analysis.predict.calibration's factors to published batch times: weighted least squares on
log(expected / measured), by Adam in torch over the same formula (calibration.expected_seconds, vectorised), with the
per-architecture factors and the torch releases' factors pulled toward 1 (an architecture or release with little data
stays near the shared factors); and the held-out predictions the bands and every stated error come from.

A sample is {"ops": [(op_class, flops, bytes, count)], "setting": calibration.Setting, "seconds": measured per
batch, "weight", and any keys to hold out by ("source", "table", ...)}.
"""
from __future__ import annotations

import math

import torch

from .calibration import (CONV_KINDS, CORES, DEPTHWISE, GROUPS, HOST_SMOOTHING, MEMORY_KINDS, PRECISIONS, REFERENCE,
                          RIDGE_KINDS, SERIAL, VERSIONS, Calibration, cores, kernel_of, quantile, release)

SHRINK_ARCH = 1e-3          # penalty per squared logit offset of an architecture's depthwise and memory fractions
SHRINK_CEILING = 1e-1       # per squared log factor of an architecture's GEMM ceiling (held out, 1e-2: worse)
SHRINK_PRECISION = 1e-1     # per squared log factor of an architecture at one precision (on top of its own)
SHRINK_VERSION = 1e-3       # per squared log factor of a release
SHRINK_CONV = 1e-2          # per squared log factor of cuDNN's convolutions at one precision (a precision only
                            # one table ran would otherwise take that table's every other cause)


class Arrays:
    """The samples' kernels as flat tensors, one entry per kernel class of a sample."""

    def __init__(self, samples: list[dict]):
        self.archs = sorted({s["setting"].sheet.architecture for s in samples})
        self.harnesses = sorted({s["setting"].harness for s in samples if s["setting"].harness})
        cols = {k: [] for k in ("row", "flops", "bytes", "count", "peak", "ceiling", "ridge", "dw", "memory",
                                "arch", "version", "group", "serial", "attention", "conv", "cores")}
        for i, s in enumerate(samples):
            setting = s["setting"]
            sheet, arch = setting.sheet, self.archs.index(setting.sheet.architecture)
            for op_class, flops, nbytes, count in s["ops"]:
                k = kernel_of(op_class, setting)
                peak = sheet.peak_flops.get(k.column) if k.column else None
                for key, value in (("row", i), ("flops", flops), ("bytes", nbytes), ("count", count),
                                   ("peak", peak or 0.0), ("ceiling", PRECISIONS.index(k.ceiling) if k.ceiling else -1),
                                   ("cores", CORES.index(cores(k.ceiling)) if k.ceiling else 0),
                                   ("ridge", RIDGE_KINDS.index(k.ridge) if k.ridge else -1),
                                   ("dw", DEPTHWISE.index(k.depthwise) if k.depthwise else -1),
                                   ("memory", MEMORY_KINDS.index(k.memory)), ("arch", arch),
                                   ("version", VERSIONS.index(release(setting.torch))),
                                   ("group", GROUPS.index(k.group)), ("serial", k.kind == SERIAL),
                                   ("attention", k.kind == "attention"),
                                   ("conv", CONV_KINDS.index(k.kind) if k.kind in CONV_KINDS else -1)):
                    cols[key].append(value)
        f64 = torch.float64
        self.t = {k: torch.tensor(v, dtype=f64 if k in ("flops", "bytes", "count", "peak") else
                                  torch.bool if k in ("serial", "attention") else torch.long) for k, v in cols.items()}
        self.n = len(samples)
        self.bandwidth = torch.tensor([s["setting"].sheet.mem_bandwidth for s in samples], dtype=f64)
        self.autocast = torch.tensor([s["setting"].dtype != "fp32" for s in samples])
        self.seconds = torch.tensor([s["seconds"] for s in samples], dtype=f64)
        self.weight = torch.tensor([s.get("weight", 1.0) for s in samples], dtype=f64)
        self.arch_rows = torch.tensor([self.archs.index(s["setting"].sheet.architecture) for s in samples])
        self.harness_rows = torch.tensor([self.harnesses.index(s["setting"].harness) if s["setting"].harness else -1
                                          for s in samples])        # -1: no harness of its own (a user's setting)


def initial(a: Arrays) -> dict[str, torch.Tensor]:
    """The starting factors, shaped for the samples' architectures and harnesses."""
    n_archs, n_harnesses = len(a.archs), len(a.harnesses)
    z = lambda *shape: torch.zeros(*shape, dtype=torch.float64)         # noqa: E731
    log = lambda v: torch.tensor(math.log(v), dtype=torch.float64)      # noqa: E731
    return {"ceiling": z(len(CORES)) + 1.5, "ceiling_arch": z(n_archs),
            "ceiling_precision": z(n_archs, len(PRECISIONS)), "attention": z(1),
            "conv_ceiling": z(len(CONV_KINDS), len(PRECISIONS)), "harness": z(max(n_harnesses, 1)) + math.log(1e-4),
            "ridge": z(len(RIDGE_KINDS)) + math.log(0.3), "depthwise": z(len(DEPTHWISE)), "depthwise_arch": z(n_archs),
            "memory": z(len(MEMORY_KINDS)) + 2.0, "memory_arch": z(n_archs), "launch": log(3e-6), "host": log(2e-5),
            "host_autocast": log(0.3), "serial_step": log(1e-7), "version": z(len(VERSIONS), len(GROUPS))}


def expected(p: dict[str, torch.Tensor], a: Arrays) -> torch.Tensor:
    """Expected seconds per sample: calibration.expected_seconds over every sample at once."""
    t = a.t
    arch = t["arch"]
    factor = p["ceiling_arch"][arch] + p["ceiling_precision"][arch, t["ceiling"].clamp(min=0)]
    ceiling = torch.sigmoid(p["ceiling"][t["cores"]]) * factor.exp()
    ceiling = torch.where(t["attention"], ceiling * torch.sigmoid(p["attention"][0]), ceiling)
    conv_factor = p["conv_ceiling"][t["conv"].clamp(min=0), t["ceiling"].clamp(min=0)].exp()
    ceiling = torch.where(t["conv"] >= 0, ceiling * conv_factor, ceiling)
    depthwise = torch.sigmoid(p["depthwise"][t["dw"].clamp(min=0)] + p["depthwise_arch"][arch])
    compute_eff = torch.where(t["ceiling"] >= 0, ceiling,
                              torch.where(t["dw"] >= 0, depthwise, torch.ones_like(ceiling)))
    bandwidth = a.bandwidth[t["row"]]
    x = (t["flops"] / t["bytes"].clamp(min=1)) / (t["peak"].clamp(min=1) / bandwidth)
    ridge = torch.where(t["ridge"] >= 0, x / (x + p["ridge"].exp()[t["ridge"].clamp(min=0)]), torch.ones_like(x))
    has_peak = (t["peak"] > 0) & (t["flops"] > 0)
    compute = torch.where(has_peak, t["flops"] / (compute_eff * ridge * t["peak"]).clamp(min=1e-30),
                          torch.zeros_like(x))
    compute = torch.where(t["serial"], t["flops"] * p["serial_step"].exp(), compute)
    memory = t["bytes"] / (torch.sigmoid(p["memory"][t["memory"]] + p["memory_arch"][arch]) * bandwidth)
    factor = p["version"][t["version"], t["group"]].exp()
    kernel = t["count"] * (torch.maximum(compute, memory) * factor + p["launch"].exp())
    gpu = torch.zeros(a.n, dtype=torch.float64).index_add(0, t["row"], kernel)
    launches = torch.zeros(a.n, dtype=torch.float64).index_add(0, t["row"], t["count"])
    host = p["host"].exp() * (1 + torch.where(a.autocast, p["host_autocast"].exp(), torch.zeros_like(gpu))) * launches
    harness = p["harness"].exp()[a.harness_rows.clamp(min=0)]
    host = host + torch.where(a.harness_rows >= 0, harness, torch.zeros_like(harness))
    return (gpu ** HOST_SMOOTHING + host ** HOST_SMOOTHING) ** (1 / HOST_SMOOTHING)


def fit(samples: list[dict], steps: int = 1500, lr: float = 0.05) -> Calibration:
    """The factors minimising the weighted mean squared log ratio of expected to measured batch time (one torch
    thread: the problem is small, and threads only contend)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = Arrays(samples)
        p = initial(a)
        for v in p.values():
            v.requires_grad_(True)
        optimizer = torch.optim.Adam(p.values(), lr=lr)
        reference = torch.tensor([v == REFERENCE for v in VERSIONS])
        log_measured, weight = a.seconds.log(), a.weight / a.weight.sum()
        for _ in range(steps):
            optimizer.zero_grad()
            with torch.no_grad():
                p["version"][reference] = 0.0          # the reference release is the unit
            loss = (weight * (expected(p, a).log() - log_measured) ** 2).sum()
            loss = loss + SHRINK_ARCH * sum((p[k] ** 2).sum() for k in ("depthwise_arch", "memory_arch"))
            loss = loss + SHRINK_CEILING * (p["ceiling_arch"] ** 2).sum()
            loss = loss + SHRINK_PRECISION * (p["ceiling_precision"] ** 2).sum()
            loss = loss + SHRINK_VERSION * (p["version"] ** 2).sum()
            loss = loss + SHRINK_CONV * (p["conv_ceiling"] ** 2).sum()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            p["version"][reference] = 0.0
        return calibration_of({k: v.detach() for k, v in p.items()}, a, samples)
    finally:
        torch.set_num_threads(threads)


def calibration_of(p: dict[str, torch.Tensor], a: Arrays, samples: list[dict]) -> Calibration:
    """The fitted tensors as a Calibration: each architecture's factors and offsets only for one the samples ran,
    each release's factors only for one they measured (the others take the reference's)."""
    versions = {release(s["setting"].torch) for s in samples}
    params = {"ceiling": dict(zip(CORES, p["ceiling"].tolist())), "attention": p["attention"].item(),
              "ridge": dict(zip(RIDGE_KINDS, p["ridge"].tolist())),
              "depthwise": dict(zip(DEPTHWISE, p["depthwise"].tolist())),
              "memory": dict(zip(MEMORY_KINDS, p["memory"].tolist())),
              "conv_ceiling": {kind: dict(zip(PRECISIONS, p["conv_ceiling"][i].tolist()))
                               for i, kind in enumerate(CONV_KINDS)},
              **{k: p[k].item() for k in ("launch", "host", "host_autocast", "serial_step")},
              "harness": {h: p["harness"][i].item() for i, h in enumerate(a.harnesses)},
              "version": {".".join(map(str, v)): dict(zip(GROUPS, p["version"][i].tolist()))
                          for i, v in enumerate(VERSIONS) if v in versions}}
    ran = {(a.archs.index(s["setting"].sheet.architecture), k.ceiling) for s in samples
           for k in (kernel_of(c, s["setting"]) for c, *_ in s["ops"]) if k.ceiling}
    arch = {name: {"ceiling": p["ceiling_arch"][i].item(),
                   "precision": {q: p["ceiling_precision"][i, j].item() for j, q in enumerate(PRECISIONS)
                                 if (i, q) in ran},
                   "depthwise": p["depthwise_arch"][i].item(), "memory": p["memory_arch"][i].item()}
            for i, name in enumerate(a.archs)}
    return Calibration(params, arch)


def predicted_over_measured(samples: list[dict], cal: Calibration) -> list[float]:
    """Predicted / measured img/s (= measured / expected seconds) of each sample."""
    from .calibration import expected_seconds

    return [s["seconds"] / expected_seconds(s["ops"], s["setting"], cal) for s in samples]


def held_out(samples: list[dict], key: str = "source", steps: int = 1500, only=None) -> list[float | None]:
    """Predicted / measured img/s of every sample, each predicted by factors fitted without its `key` value (only:
    the values to hold out, None for all; a sample of another value gets None)."""
    ratios: list[float | None] = [None] * len(samples)
    for value in sorted({s[key] for s in samples}):
        if only is not None and value not in only:
            continue
        cal = fit([s for s in samples if s[key] != value], steps)
        test = [i for i, s in enumerate(samples) if s[key] == value]
        for i, r in zip(test, predicted_over_measured([samples[i] for i in test], cal)):
            ratios[i] = r
    return ratios


def band(ratios: list[float], weights: list[float] | None = None) -> tuple[float, float]:
    """(p10, p90) of measured / expected img/s: multiply the expected rate by these (weights: per ratio, as the
    caller weighs them; benchmarks/fit_gpu_calibration.bands weighs each held-out source alike)."""
    measured_over = [1 / r for r in ratios]
    return quantile(measured_over, 0.1, weights), quantile(measured_over, 0.9, weights)
