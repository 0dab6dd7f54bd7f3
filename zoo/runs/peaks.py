"""The GEMM peak each timed row's MFU is computed against: probed once per machine, dtype and thread
count, kept in the user's cache folder (zoo.store.user_cache) so every run on the machine, into any
--out folder, shares one peak instead of re-probing a machine whose load changes by the minute, and
copied with its probes and provenance into <out>/results/peaks.json.

A cached peak is used while the machine's fingerprint (CPU model, GPU, torch version) is the same;
`reprobe=True` (`zoo.compare --reprobe-peak`) probes again and the new probe replaces the kept one (a kept
peak that is too high can always be replaced). An entry of the wrong shape, or with a number the row schema
cannot hold, is dropped and probed again. With the user cache off (`--no-cache`) the folder's peaks.json alone is used.
The memory bandwidth (a STREAM-like triad, analysis.timing.bandwidth) for the roofline estimate follows the
same rules (user cache, peaks.json copy, a probe under load not kept), once per machine, device and thread count.
"""
from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

from analysis.timing.fingerprint import available_cores, torch_version
from analysis.vocab import resolve_device

from ..store.safe_io import kind_of, strict_loads, write_atomic
from ..store.schema import MAX_COUNT
from .tasks import Task, machine
from ..store.user_cache import UserCache

PEAKS_FILE = "peaks.json"
NAMESPACE = "peak"


def peak_key(task: Task) -> str:
    device = resolve_device(task.timing.device).type
    threads = task.timing.threads or (available_cores() if device == "cpu" else 1)
    found = machine(device)
    return " | ".join([found["cpu_model"] or "?", found["gpu_name"] or "-", torch_version(), device,
                       task.request.dtype, f"{threads} threads"])


def _number(value, low: float, high: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


def _positive(value) -> bool:
    """A rate the row schema can hold (peak_flops and mem_bandwidth are bounded like every count)."""
    return _number(value, 0, MAX_COUNT) and value > 0


def _optional(entry: dict, name: str, kind: type) -> bool:
    return entry.get(name) is None or (isinstance(entry[name], kind) and (kind is bool) == isinstance(entry[name], bool))


def _share_ok(entry: dict, share: str) -> bool:
    return entry.get(share) is None or _number(entry[share], 0, 1e6)


def measure_peak_flops(device: str, dtype: str, threads: int | None = None) -> dict:
    """analysis.timing.peak's probe, imported when a probe runs (torch): a run that only counts needs none."""
    from analysis.timing.peak import measure_peak_flops as probe

    return probe(device, dtype, threads)


def measure_bandwidth(device: str, threads: int | None = None) -> dict:
    """analysis.timing.bandwidth's triad, imported when it runs (torch)."""
    from analysis.timing.bandwidth import measure_bandwidth as probe

    return probe(device, threads)


METRIC = {"peak": "peak_flops", "bandwidth": "mem_bandwidth"}     # what "higher" means for each kind of entry


def _under_load(probe: dict, task: Task, share_field: str) -> bool:
    from .timed import is_noisy

    timing = task.timing
    return resolve_device(timing.device).type == "cpu" and is_noisy(0.0, probe.get(share_field), timing.threads)


def usable_peak(entry) -> bool:
    """A kept entry of the shape measure_peak_flops returns; any other is dropped and probed again."""
    return (isinstance(entry, dict) and _positive(entry.get("peak_flops")) and isinstance(entry.get("peak_kernel"), str)
            and _optional(entry, "peak_method", str) and _optional(entry, "fast_gemm", bool)
            and _share_ok(entry, "peak_foreign_cpu_share"))


def usable_bandwidth(entry) -> bool:
    """A kept entry of the shape measure_bandwidth returns."""
    return (isinstance(entry, dict) and _positive(entry.get("mem_bandwidth"))
            and _share_ok(entry, "bandwidth_foreign_cpu_share"))


def bandwidth_key(task: Task) -> str:
    """peak_key without the dtype: the triad measures bytes/s, whatever the model's dtype."""
    parts = peak_key(task).split(" | ")
    return " | ".join(["bandwidth", *parts[:4], parts[5]])


class PeakCache:
    """`get(task)` -> measure_peak_flops' dict for the task's device, dtype and threads, with `peak_provenance`
    and the machine's measured memory bandwidth (`mem_bandwidth`, bytes/s) added."""

    def __init__(self, results_dir: Path | None, reprobe: bool = False):
        self.path = results_dir / PEAKS_FILE if results_dir else None
        self.reprobe, self.probed_now, self.resolved = reprobe, set(), set()
        self.labels: dict[str, str] = {}     # key -> how this run got its peak, when it probed
        self.unkept: set[str] = set()        # keys probed under load: used this run, never written
        self.user = UserCache(NAMESPACE)
        self.peaks: dict[str, dict] = self._load()

    def _load(self) -> dict:
        if self.path is None or not self.path.exists() or kind_of(self.path):   # a link, FIFO, folder: not read
            return {}
        try:
            loaded = strict_loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):     # damaged: probe again rather than trust it
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items()
                if (usable_bandwidth(v) if str(k).startswith("bandwidth | ") else usable_peak(v))}

    def get(self, task: Task) -> dict:
        """The peak, with `peak_probe` saying where it came from. A probe that others' CPU disturbed (the noise
        rule of timed rows) is used for this run only, never kept, and a kept one of that kind is probed again."""
        device = resolve_device(task.timing.device)
        # also probed again: a 16-bit peak probed before the fast-GEMM check (a slow fp16 GEMM read MFU > 1000%)
        key, peak = self._kept_or_probed("peak", peak_key(task), task, usable_peak,
                                         lambda: measure_peak_flops(str(device), task.request.dtype,
                                                                    task.timing.threads),
                                         accept=lambda p: "fast_gemm" in p or task.request.dtype == "fp32")
        return {**peak, **self.bandwidth(task), "peak_probe": self.labels.get(key, "kept from a quiet probe")}

    def bandwidth(self, task: Task) -> dict:
        """measure_bandwidth's dict for bandwidth_key(task), kept like the GEMM peak."""
        return self._kept_or_probed("bandwidth", bandwidth_key(task), task, usable_bandwidth,
                                    lambda: measure_bandwidth(str(resolve_device(task.timing.device)),
                                                              task.timing.threads))[1]

    def _kept_or_probed(self, kind: str, key: str, task: Task, usable, probe,
                        accept=lambda p: True) -> tuple[str, dict]:
        """(key, entry): the higher of peaks.json's and the user cache's quiet entries (`kind`: peak or bandwidth),
        probed when there is none (or on reprobe, the probe replacing them); a probe under load is used for this
        run only, written neither to the folder nor to the user cache."""
        metric, share = METRIC[kind], f"{kind}_foreign_cpu_share"
        cache_key, provenance = {f"{kind}_key": key}, f"{kind}_provenance"
        if key in self.resolved:
            return key, self.peaks[key]
        folder = self.peaks.get(key)
        user = self.user.get(cache_key, usable)
        candidates = [p for p in (folder, user) if p is not None and accept(p) and not _under_load(p, task, share)]
        kept = max(candidates, key=lambda p: p[metric]) if candidates else None
        if kept is None or (self.reprobe and key not in self.probed_now):
            probed = probe()
            self.probed_now.add(key)
            if _under_load(probed, task, share):
                others = 100 * (probed.get(share) or 0)
                self.labels[key] = f"probed under load (others' CPU {others:.0f}%), not kept"
                self.unkept.add(key)
                self.peaks[key] = probed
                self.resolved.add(key)
                return key, probed
            self.labels[key] = "probed now, kept"
            self.unkept.discard(key)
            kept = {**probed, provenance: {"probed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                           f"{kind}_key": key}}
            user = None     # replaced, whichever was higher
        if user is None or kept[metric] > user[metric]:
            self.user.put(cache_key, kept, {"results": str(self.path) if self.path else None})
        if self.user.entry(cache_key) is not None:
            kept = {**kept, provenance: {**kept.get(provenance, {}), "cache_file": str(self.user.path(cache_key))}}
        self.resolved.add(key)
        if kept != folder:
            self.peaks[key] = kept
            self._save()
        return key, kept

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # atomic: a reader sees the old file or the new one, never half; a link at the path is replaced
            kept = {k: v for k, v in self.peaks.items() if k not in self.unkept}
            write_atomic(self.path, json.dumps(kept, indent=1, sort_keys=True, allow_nan=False))
        except OSError as e:      # a folder in the way, a full disk: the run goes on, the peak is not kept
            warnings.warn(f"cannot keep the GEMM peak in {self.path}: {e.strerror or e}", stacklevel=2)
