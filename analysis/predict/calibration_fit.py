"""Fitting analysis.predict.calibration's factors to measured batch times: least squares on log(expected / measured),
by gradient descent in torch (efficiencies through a sigmoid, so each stays in (0, 1)); and the held-out
(leave-one-group-out) predictions the band and the honest error figures come from.

A sample is {"ops": [(op_class, flops, bytes, count)], "peaks" (FLOP/s per kernel class, analysis.predict.calibration's
class_peaks), "bandwidth" (per s), "seconds" (measured per batch), "group" (a family or a device name)}.
"""
from __future__ import annotations

import math

import torch

from .calibration import COMPUTE_CLASSES, GEMM_CLASSES, KERNEL_CLASSES, SERIAL, Calibration, expected_seconds, quantile

_N = len(KERNEL_CLASSES)


def _arrays(samples: list[dict]):
    rows, cls, flops, nbytes, count, peak = [], [], [], [], [], []
    for i, s in enumerate(samples):
        for c, f, b, n in s["ops"]:
            rows.append(i), cls.append(KERNEL_CLASSES.index(c)), flops.append(f), nbytes.append(b), count.append(n)
            peak.append(min(s["peaks"][c], 1e30))           # a serial kernel's peak is inf: its steps time it
    d = torch.float64
    per_row = {k: torch.tensor([s[k] for s in samples], dtype=d) for k in ("bandwidth", "seconds")}
    return (torch.tensor(rows), torch.tensor(cls), torch.tensor(flops, dtype=d), torch.tensor(nbytes, dtype=d),
            torch.tensor(count, dtype=d), torch.tensor(peak, dtype=d), per_row)


def _calibration(params: dict[str, torch.Tensor]) -> Calibration:
    e, m = torch.sigmoid(params["compute"]).tolist(), torch.sigmoid(params["memory"]).tolist()
    ridge = params["log_ridge"].exp().tolist()
    return Calibration({c: 1.0 if c in GEMM_CLASSES else e[KERNEL_CLASSES.index(c)] for c in COMPUTE_CLASSES},
                       {c: m[i] for i, c in enumerate(KERNEL_CLASSES)},
                       {c: ridge[KERNEL_CLASSES.index(c)] for c in GEMM_CLASSES}, math.exp(params["log_launch"].item()),
                       serial_step_seconds=math.exp(params["log_step"].item()))


def fit(samples: list[dict], steps: int = 1500, lr: float = 0.05) -> Calibration:
    """The factors minimising the mean squared log ratio of expected to measured batch time (one thread:
    the problem is small, and threads only contend)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(samples, steps, lr)
    finally:
        torch.set_num_threads(threads)


def _fit(samples: list[dict], steps: int, lr: float) -> Calibration:
    rows, cls, flops, nbytes, count, peak, per_row = _arrays(samples)
    params = {"compute": torch.zeros(_N, dtype=torch.float64), "memory": torch.ones(_N, dtype=torch.float64),
              "log_ridge": torch.full((_N,), math.log(0.1), dtype=torch.float64),
              "log_launch": torch.tensor(math.log(3e-6), dtype=torch.float64),
              "log_step": torch.tensor(math.log(1e-8), dtype=torch.float64)}   # NB: stays there without serial rows
    for p in params.values():
        p.requires_grad_(True)
    optimizer = torch.optim.Adam(params.values(), lr=lr)
    computes = torch.tensor([c in COMPUTE_CLASSES for c in KERNEL_CLASSES])[cls]
    is_gemm = torch.tensor([c in GEMM_CLASSES for c in KERNEL_CLASSES])[cls]
    is_serial = cls == KERNEL_CLASSES.index(SERIAL)
    bandwidth = per_row["bandwidth"][rows]
    ridge_x = (flops / nbytes.clamp(min=1)) / (peak / bandwidth)     # intensity over the ridge point
    log_measured = per_row["seconds"].log()
    for _ in range(steps):
        optimizer.zero_grad()
        e = torch.sigmoid(params["compute"])[cls]
        e = torch.where(is_gemm, ridge_x / (ridge_x + params["log_ridge"].exp()[cls]), torch.where(computes, e, 1.0))
        compute = torch.where(flops > 0, flops / (e * peak).clamp(min=1e-30), 0.0)
        compute = torch.where(is_serial, flops * params["log_step"].exp(), compute)
        memory = nbytes / (torch.sigmoid(params["memory"])[cls] * bandwidth)
        kernel = count * (torch.maximum(compute, memory) + params["log_launch"].exp())
        expected = torch.zeros(len(samples), dtype=torch.float64).index_add(0, rows, kernel)
        loss = ((expected.log() - log_measured) ** 2).mean()
        loss.backward()
        optimizer.step()
    return _calibration({k: v.detach() for k, v in params.items()})


def expected(sample: dict, cal: Calibration) -> float:
    return expected_seconds(sample["ops"], sample["peaks"], sample["bandwidth"], cal)


def held_out(samples: list[dict], key: str = "group", steps: int = 1500) -> list[float]:
    """measured / expected images per second (expected / measured seconds) for every sample, each predicted
    by factors fitted without its group."""
    return held_out_both(samples, (key,), steps)


def held_out_both(samples: list[dict], keys: tuple[str, ...] = ("device", "group"), steps: int = 1500) -> list[float]:
    """As held_out, each sample predicted by factors fitted on the samples that share none of its `keys` values:
    with ("device", "group"), its GPU's table and its family (on every GPU) both left out -- a GPU no table
    measured running a model of a family no table held."""
    ratios = [0.0] * len(samples)
    for combo in sorted({tuple(s[k] for k in keys) for s in samples}):
        cal = fit([s for s in samples if all(s[k] != v for k, v in zip(keys, combo))], steps)
        for i, s in enumerate(samples):
            if tuple(s[k] for k in keys) == combo:
                ratios[i] = expected(s, cal) / s["seconds"]
    return ratios


def band(ratios: list[float]) -> tuple[float, float]:
    """(p10, p90) of measured / expected images per second: multiply the expected rate by these."""
    return quantile(ratios, 0.1), quantile(ratios, 0.9)
