"""A lower bound on one step's latency on this machine, from a model's counted work and the machine's kept
GEMM peak and memory bandwidth (zoo.runs.peaks): zoo.select excludes a model without timing it when even
this bound breaks the budget.

    bound_ms = max(compute, memory), per batch (a training step counts 3 x the forward's MACs)
    compute  = 2 x batch x (gemm_macs / GEMM_MARGIN + other_macs / CONV_MARGIN) / peak_flops
    memory   = max(0, weight_bytes - on-chip cache) / (BANDWIDTH_MARGIN x mem_bandwidth)

Why it is a true lower bound rather than an estimate (analysis.predict.roofline's estimate is neither):
- peak_flops is the best rate torch.mm reached (best of 5 over several sizes), not the hardware's: another
  library's GEMM can beat it (ONNX Runtime's MLAS ran ViT-B/16 at 1.66x the torch.mm peak, README's ONNX
  table: 35.2 GFLOP in 95.3 ms against 222 GFLOP/s). GEMM_MARGIN = 3 leaves room for that and for a peak
  probed at a slow moment. gemm_macs are the MACs of the linear layers and attention's matmuls.
- every other MAC (convolutions, above all) gets CONV_MARGIN = 12 = 3 x 4: Winograd F(4x4, 3x3) does 4x
  fewer multiplies than a 3x3 convolution's nominal MACs (Lavin & Gray 2016), which is why oneDNN's
  convolutions run ResNet-50 at an MFU above 1 (README: roofline section).
- a step must read every weight; the part that fits in no cache (all cache levels sysfs lists, summed) comes
  from DRAM at most at the triad's measured rate, with BANDWIDTH_MARGIN = 2 for a read-only stream's
  advantage over a triad. Activations are left out (they may live in cache).
- the peak and bandwidth are the largest trustworthy ones for the machine (trusted_rates): this machine's
  kept quiet probe, or the figure committed for its CPU model (zoo/models/data/cpu_peaks.json, from
  results/peaks.json), whichever is larger. A probe taken while others used more than 15% of our cores is
  never used, nor scaled: a loaded probe underestimates the peak (115 GFLOP/s at 88% foreign load against
  204 committed, issue 42), which makes the bound too high.
- on a GPU no bound is used: cuDNN may run fp32 convolutions on TF32 tensor cores, ~7x the fp32 GEMM peak.
A bound that is 0 (no peak kept, a GPU) excludes nothing.
"""
from __future__ import annotations

import os
from pathlib import Path

from analysis.timing.contention import NOISY_FOREIGN_CPU_SHARE, share_of_ours
from analysis.units import GIB, KIB, MIB

GEMM_MARGIN = 3.0
CONV_MARGIN = 12.0
BANDWIDTH_MARGIN = 2.0
GEMM_COMPONENTS = ("mlp", "attn_proj", "attn_matmul", "head")      # analysis.count's linear-layer components
CPU_CACHES = Path("/sys/devices/system/cpu")


def _size_bytes(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": KIB, "M": MIB, "G": GIB}.get(text[-1:], 1)
    return int(text.rstrip("KMG") or 0) * scale


def cache_bytes(root: Path = CPU_CACHES) -> int | None:
    """Every data or unified cache of the machine, each counted once (sysfs shared_cpu_list), summed; None
    when sysfs does not say (then the memory term is not used)."""
    seen: dict[tuple, int] = {}
    for index in root.glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            key = ((index / "level").read_text().strip(), (index / "shared_cpu_list").read_text().strip())
            seen[key] = _size_bytes((index / "size").read_text())
        except (OSError, ValueError):
            return None
    return sum(seen.values()) or None


def split_macs(cost_row: dict) -> tuple[int, int]:
    """(GEMM MACs, other MACs) per image of a cost row (all MACs count as other without a breakdown)."""
    by = cost_row.get("macs_by_component") or {}
    gemm = sum(by.get(k) or 0 for k in GEMM_COMPONENTS)
    return gemm, max(0, cost_row["macs"] - gemm)


from ..runs.peaks import COMMITTED_PEAKS, committed_rates  # noqa: E402,F401 - kept with the peaks they bound


def trusted_rates(probed: dict, committed: dict, threads: int | None, cores: int | None = None) -> dict:
    """The peak and bandwidth the bound uses: for each, the larger of this machine's probe (kept or just
    probed) when it was quiet (others on at most 15% of our cores) and the committed figure; a loaded probe
    is left out, never scaled. Each rate says where it came from (`peak_flops_source`, ...)."""
    cores = cores or os.cpu_count() or 1
    out = {k: v for k, v in probed.items() if k not in ("peak_flops", "mem_bandwidth")}
    for rate, share in (("peak_flops", "peak_foreign_cpu_share"), ("mem_bandwidth", "bandwidth_foreign_cpu_share")):
        options = []
        if probed.get(rate):
            f = max(0.0, share_of_ours(probed.get(share), threads, cores))
            if f <= NOISY_FOREIGN_CPU_SHARE:
                options.append((probed[rate], "this machine's quiet probe"))
            else:
                out[f"{rate}_refused"] = f"this machine's probe ran with others on {100 * f:.0f}% of our cores"
        if committed.get(rate):
            options.append((committed[rate], committed[f"{rate}_source"]))
        if options:
            out[rate], out[f"{rate}_source"] = max(options, key=lambda o: o[0])
    return out


def lower_bound_ms(work: dict, peak: dict | None, device: str, caches: int | None) -> float:
    """The bound, ms per batch. work: gemm_macs, other_macs (per image), weight_bytes, batch_size, train."""
    if not peak or device != "cpu" or not peak.get("peak_flops"):
        return 0.0
    per_image = work["gemm_macs"] / GEMM_MARGIN + work["other_macs"] / CONV_MARGIN
    steps = 3 if work.get("train") else 1
    compute = 2 * work["batch_size"] * steps * per_image / peak["peak_flops"]
    memory = 0.0
    if peak.get("mem_bandwidth") and caches is not None:
        memory = max(0, work["weight_bytes"] - caches) / (BANDWIDTH_MARGIN * peak["mem_bandwidth"])
    return 1e3 * max(compute, memory)


def bound_text(bound: float, budget: float, work: dict, peak: dict) -> str:
    from ..answers.text import num

    rate = f"{peak['peak_flops'] / 1e9:.0f} GFLOP/s GEMM peak"
    if peak.get("peak_flops_source"):
        rate += f" ({peak['peak_flops_source']})"
    if peak.get("mem_bandwidth"):
        rate += f", {peak['mem_bandwidth'] / 1e9:.1f} GB/s"
        if peak.get("mem_bandwidth_source") and peak["mem_bandwidth_source"] != peak.get("peak_flops_source"):
            rate += f" ({peak['mem_bandwidth_source']})"
    return (f"lower bound {num(bound)} ms > {budget:g} ms on this machine, not timed "
            f"({num((work['gemm_macs'] + work['other_macs']) / 1e9)} GMACs, {rate}; docs/select.md)")
