"""Agreement check with timm's benchmark protocol: deit_s, batch 8, 224, same threads, same process.

The reference loop is written here (not timm's script): 10 warm-up steps, 40 timed steps on one
reused input, one synchronisation at the end, imgs_per_s = batch x 40 / elapsed. Our harness
(analysis.timing.time_model with its default warm-up / min_iters / min_seconds) must agree
within 10%. Runs alternate (reference, ours, reference, ours, ...) so machine load hits both alike.

Before each pair it waits for a quiet CPU, at most --quiet-timeout-s per pair and --quiet-budget-s in all,
and prints how long it waited ("waited for quiet: X s", which the device check's summary reads).

Run: python benchmarks/timm_protocol.py [--model deit_s] [--batch-size 8] [--repeats 5] [--quiet-budget-s 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

import zoo  # noqa: E402
from analysis.timing.contention import ForeignCpuMeter, wait_for_quiet  # noqa: E402
from analysis.timing.fingerprint import available_cores  # noqa: E402
from analysis.size import Size  # noqa: E402
from analysis.timing.backends import EagerBackend, TimingSetting  # noqa: E402
from analysis.timing.harness import time_model  # noqa: E402
from analysis.timing.latency import synchronize  # noqa: E402
from analysis.vocab import resolve_device  # noqa: E402

PROTOCOL_WARMUP, PROTOCOL_STEPS = 10, 40
TOLERANCE = 0.10


def timm_protocol_imgs_per_s(model, images: torch.Tensor, device: torch.device) -> float:
    """timm benchmark.py's inference loop: warm-up, timed steps, sync once at the end."""
    model.eval()
    with torch.inference_mode():
        for _ in range(PROTOCOL_WARMUP):
            model(images)
        synchronize(device)
        start = time.perf_counter()
        for _ in range(PROTOCOL_STEPS):
            model(images)
        synchronize(device)
        elapsed = time.perf_counter() - start
    return images.shape[0] * PROTOCOL_STEPS / elapsed


def agreement(model_name: str = "deit_s", batch_size: int = 8, img_size: int = 224, repeats: int = 5,
              device: str = "auto", threads: int | None = None, quiet_timeout_s: float = 10.0,
              quiet_budget_s: float = 30.0) -> dict:
    """Interleave the reference loop and our harness `repeats` times on one model instance.

    Before each pair, wait up to quiet_timeout_s for an idle machine, and at most quiet_budget_s over all
    pairs (so a busy host cannot spend the run waiting); the ratio is the median of pairs.
    """
    torch_device = resolve_device(device)
    threads = threads or available_cores()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = zoo.create_model(model_name, img_size=img_size).to(torch_device).eval()
    images = torch.randn(batch_size, 3, img_size, img_size, device=torch_device)
    reference, ours, foreign_cpu_shares = [], [], []
    waited, quiet_pairs = 0.0, 0
    for _ in range(repeats):
        timeout = min(quiet_timeout_s, quiet_budget_s - waited)
        if timeout > 0:
            start = time.monotonic()
            quiet_pairs += wait_for_quiet(timeout_s=timeout)
            waited += time.monotonic() - start
        with ForeignCpuMeter() as foreign_cpu:
            reference.append(timm_protocol_imgs_per_s(model, images, torch_device))
            ours.append(time_model(model, EagerBackend(), Size.of(img_size), batch_size,      # default protocol
                                   TimingSetting(device=torch_device.type, threads=threads)).imgs_per_s)
        foreign_cpu_shares.append(foreign_cpu.share)
    ratios = [mine / theirs for mine, theirs in zip(ours, reference)]
    ratio = statistics.median(ratios)
    return {"model": model_name, "batch_size": batch_size, "threads": threads, "device": str(torch_device),
            "reference_imgs_per_s": reference, "ours_imgs_per_s": ours, "ratio": ratio,
            "foreign_cpu_shares": foreign_cpu_shares, "quiet_wait_s": waited, "quiet_pairs": quiet_pairs,
            "quiet_budget_s": quiet_budget_s,
            "within_tolerance": abs(ratio - 1.0) <= TOLERANCE}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="deit_s")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quiet-timeout-s", type=float, default=10.0, help="most seconds to wait before one pair")
    parser.add_argument("--quiet-budget-s", type=float, default=30.0, help="most seconds to wait over all pairs")
    args = parser.parse_args(argv)
    result = agreement(args.model, args.batch_size, args.img_size, args.repeats, args.device, args.threads,
                       args.quiet_timeout_s, args.quiet_budget_s)
    print(f"waited for quiet: {result['quiet_wait_s']:.1f} s in all (at most {args.quiet_budget_s:g} s; quiet "
          f"before {result['quiet_pairs']} of {args.repeats} pairs)", flush=True)
    for theirs, mine, foreign in zip(result["reference_imgs_per_s"], result["ours_imgs_per_s"],
                                     result["foreign_cpu_shares"]):
        others = "?" if foreign is None else f"{foreign:.0%}"
        print(f"timm protocol {theirs:8.2f} img/s   archzoo harness {mine:8.2f} img/s   ratio {mine / theirs:.3f}"
              f"   (others' CPU {others})")
    verdict = "OK" if result["within_tolerance"] else f"OUTSIDE +-{TOLERANCE:.0%}"
    print(f"{result['model']} bs{result['batch_size']} {result['device']} threads={result['threads']}: "
          f"ours / timm-protocol imgs_per_s = {result['ratio']:.3f} ({verdict})")
    return 0 if result["within_tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
