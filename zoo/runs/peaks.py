"""The GEMM peak each timed row's MFU is computed against: probed once per machine, dtype and thread
count, kept in the user's cache folder (zoo.store.user_cache) so every run on the machine, into any
--out folder, shares one peak instead of re-probing a machine whose load changes by the minute, and
copied with its probes and provenance into <out>/results/peaks.json.

A cached peak is used while the machine's fingerprint (CPU model, GPU, torch version) is the same;
`reprobe=True` (`zoo.compare --reprobe-peak`) probes again and the new probe replaces the kept one (a kept
peak that is too high can always be replaced) unless it ran under load: then the quiet kept one stays, and says
so. A probe under load (others' CPU past the noise rule, or under half the quiet figure committed for the same CPU,
torch and threads, zoo/models/data/cpu_peaks.json) is kept nowhere; used when no quiet one is kept, the row says
so (`peak_probe`: "probed under load (why), not kept") and zoo.compare's table marks the MFU and roofline it gave. An entry of the wrong shape, or with a number the row schema
cannot hold, is dropped and probed again. With the user cache off (`--no-cache`) the folder's peaks.json alone is used.
The memory bandwidth (a STREAM-like triad, analysis.timing.bandwidth) for the roofline estimate follows the
same rules (user cache, peaks.json copy, a probe under load not kept), once per machine, device and thread count.
"""
from __future__ import annotations

import json
import os
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
COMMITTED_PEAKS = Path(__file__).resolve().parents[1] / "models" / "data" / "cpu_peaks.json"
SLOW_SHARE = 0.5          # a probe under half the quiet figure committed for its CPU model ran under load


def committed_rates(cpu_model: str | None, dtype: str, threads: int | None, cores: int | None = None,
                    table: Path = COMMITTED_PEAKS) -> dict:
    """The committed quiet GEMM peak and bandwidth of this CPU model ({} for none): the largest of its entries
    probed on at least as many threads as we time on (more threads only make a peak larger)."""
    ours = threads or cores or os.cpu_count() or 1
    try:
        entries = json.loads(table.read_text(encoding="utf-8"))["peaks"]
    except (OSError, ValueError, KeyError):
        return {}
    same = [e for e in entries if e["cpu_model"] == cpu_model and e["device"] == "cpu" and e["threads"] >= ours]
    out = {}
    for rate, fits in (("peak_flops", lambda e: e.get("dtype") == dtype), ("mem_bandwidth", lambda e: True)):
        best = max((e for e in same if e.get(rate) and fits(e)), key=lambda e: e[rate], default=None)
        if best is not None:
            out[rate] = best[rate]
            out[f"{rate}_source"] = f"committed for {cpu_model}, {best['threads']} threads ({best['key']})"
    return out


def committed_quiet(key: str, metric: str) -> float | None:
    """The quiet probe committed (COMMITTED_PEAKS) under exactly this peak_key or bandwidth_key (CPU model, torch,
    dtype, threads), or None."""
    try:
        entries = json.loads(COMMITTED_PEAKS.read_text(encoding="utf-8"))["peaks"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return next((e[metric] for e in entries if isinstance(e, dict) and e.get("key") == key
                 and _positive(e.get(metric))), None)


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


def _under_load(probe: dict, task: Task, kind: str, key: str, new: bool = True) -> str | None:
    """Why a probe is taken as run under load, or None: others' CPU beyond the noise rule of timed rows, or, for a
    `new` probe, a rate under SLOW_SHARE of the quiet one committed for this very key (a CPU quota or a noisy
    neighbour that /proc/stat does not show: 52.8 against 204 GFLOP/s on the 2-core EPYC, issue 54).
    NB: "AMD EPYC" and "Intel(R) Xeon(R) Processor" name several generations in cloud VMs: a quiet CPU that is
    really twice as slow is told apart from a loaded one only by its foreign share, and is flagged (not kept)."""
    from .timed import is_noisy

    timing, metric, share = task.timing, METRIC[kind], probe.get(f"{kind}_foreign_cpu_share")
    if resolve_device(timing.device).type != "cpu":
        return None
    if is_noisy(0.0, share, timing.threads):
        return f"others' CPU {100 * (share or 0):.0f}%"
    quiet = committed_quiet(key, metric)
    if new and quiet and probe[metric] < SLOW_SHARE * quiet:
        unit, scale = ("GFLOP/s", 1e9) if kind == "peak" else ("GB/s", 1e9)
        return (f"{probe[metric] / scale:.1f} {unit}, under {SLOW_SHARE:.0%} of the {quiet / scale:.0f} {unit} "
                f"committed for this machine's CPU, torch and threads")
    return None


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
        """The peak, with `peak_probe` saying where it came from (the row's field of that name): "probed under load
        (why), not kept" when the GEMM peak is a probe that ran under load, used for this run only ("; memory
        bandwidth probed under load ..." for the bandwidth). A kept quiet one is used before a loaded new probe, and
        says so."""
        device = resolve_device(task.timing.device)
        # also probed again: a 16-bit peak probed before the fast-GEMM check (a slow fp16 GEMM read MFU > 1000%)
        key, peak = self._kept_or_probed("peak", peak_key(task), task, usable_peak,
                                         lambda: measure_peak_flops(str(device), task.request.dtype,
                                                                    task.timing.threads),
                                         accept=lambda p: "fast_gemm" in p or task.request.dtype == "fp32")
        bandwidth, label = self.bandwidth(task), self.labels.get(key, "kept from a quiet probe")
        if bandwidth_key(task) in self.unkept:
            label += f"; memory bandwidth {self.labels[bandwidth_key(task)]}"
        return {**peak, **bandwidth, "peak_probe": label}

    def bandwidth(self, task: Task) -> dict:
        """measure_bandwidth's dict for bandwidth_key(task), kept like the GEMM peak."""
        return self._kept_or_probed("bandwidth", bandwidth_key(task), task, usable_bandwidth,
                                    lambda: measure_bandwidth(str(resolve_device(task.timing.device)),
                                                              task.timing.threads))[1]

    def _kept_or_probed(self, kind: str, key: str, task: Task, usable, probe,
                        accept=lambda p: True) -> tuple[str, dict]:
        """(key, entry): the higher of peaks.json's and the user cache's quiet entries (`kind`: peak or bandwidth),
        probed when there is none (or on reprobe, the probe replacing them); a probe under load is used for this
        run only when no quiet entry is kept, written neither to the folder nor to the user cache."""
        metric, provenance = METRIC[kind], f"{kind}_provenance"
        cache_key = {f"{kind}_key": key}
        if key in self.resolved:
            return key, self.peaks[key]
        folder = self.peaks.get(key)
        user = self.user.get(cache_key, usable)
        candidates = [p for p in (folder, user)
                      if p is not None and accept(p) and not _under_load(p, task, kind, key, new=False)]
        kept = max(candidates, key=lambda p: p[metric]) if candidates else None
        if kept is None or (self.reprobe and key not in self.probed_now):
            probed = probe()
            self.probed_now.add(key)
            why = _under_load(probed, task, kind, key)
            if why and kept is not None:        # --reprobe-peak on a busy machine: the quiet one stays
                self.labels[key] = f"kept from a quiet probe (probed again under load: {why}; not used)"
            elif why:
                self.labels[key] = f"probed under load ({why}), not kept"
                self.unkept.add(key)
                self.peaks[key] = probed
                self.resolved.add(key)
                return key, probed
            else:
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
