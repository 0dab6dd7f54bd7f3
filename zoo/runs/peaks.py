"""The GEMM peak each timed row's MFU is computed against: probed once per machine, dtype and thread
count, and kept in <out>/results/peaks.json with its probes, so back-to-back runs share one peak
instead of each re-probing a machine whose load changes by the minute.

A cached peak is used while the machine's fingerprint (CPU model, GPU, torch version) is the same;
`reprobe=True` (`zoo.compare --reprobe-peak`) probes again and keeps the higher of the two (others'
load can only lower a probe). The memory bandwidth (a STREAM-like triad, analysis.timing.bandwidth) is
kept beside it the same way, once per machine, device and thread count, for the roofline estimate.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch

from analysis.timing.fingerprint import available_cores
from analysis.timing.bandwidth import measure_bandwidth
from analysis.timing.peak import measure_peak_flops
from analysis.vocab import resolve_device

from .tasks import Task, machine

PEAKS_FILE = "peaks.json"


def peak_key(task: Task) -> str:
    device = resolve_device(task.device).type
    threads = task.threads or (available_cores() if device == "cpu" else 1)
    found = machine(device)
    return " | ".join([found["cpu_model"] or "?", found["gpu_name"] or "-", torch.__version__, device,
                       task.dtype, f"{threads} threads"])


def bandwidth_key(task: Task) -> str:
    """peak_key without the dtype: the triad measures bytes/s, whatever the model's dtype."""
    parts = peak_key(task).split(" | ")
    return " | ".join(["bandwidth", *parts[:4], parts[5]])


class PeakCache:
    """`get(task)` -> measure_peak_flops' dict for the task's device, dtype and threads, with the
    machine's measured memory bandwidth (`mem_bandwidth`, bytes/s) added."""

    def __init__(self, results_dir: Path | None, reprobe: bool = False):
        self.path = results_dir / PEAKS_FILE if results_dir else None
        self.reprobe, self.probed_now = reprobe, set()
        self.peaks: dict[str, dict] = self._load()

    def _load(self) -> dict:
        if self.path is None or not self.path.exists():
            return {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):     # damaged: probe again rather than trust it
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def get(self, task: Task) -> dict:
        key = peak_key(task)
        kept = self.peaks.get(key)
        if kept is None or (self.reprobe and key not in self.probed_now):
            device = resolve_device(task.device)
            probed = measure_peak_flops(str(device), task.dtype, task.threads)
            self.probed_now.add(key)
            if kept is None or probed["peak_flops"] > kept["peak_flops"]:
                self.peaks[key] = probed
                self._save()
        return {**self.peaks[key], **self.bandwidth(task)}

    def bandwidth(self, task: Task) -> dict:
        """measure_bandwidth's dict, probed once per bandwidth_key (again, keeping the higher, on reprobe)."""
        key = bandwidth_key(task)
        kept = self.peaks.get(key)
        if kept is None or (self.reprobe and key not in self.probed_now):
            probed = measure_bandwidth(str(resolve_device(task.device)), task.threads)
            self.probed_now.add(key)
            if kept is None or probed["mem_bandwidth"] > kept["mem_bandwidth"]:
                self.peaks[key] = probed
                self._save()
        return self.peaks[key]

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, suffix=".tmp", delete=False,
                                         encoding="utf-8") as f:
            json.dump(self.peaks, f, indent=1, sort_keys=True)
        os.replace(f.name, self.path)   # atomic: a reader sees the old file or the new one, never half
