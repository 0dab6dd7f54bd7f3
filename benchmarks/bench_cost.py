"""Cost + memory records for every registry model at 224 and 384, on meta; prints wall time and peak RSS.

Target (issue 3): under 30 s wall and 1.5 GB peak RSS on a 2-core CPU. Usage:
    python benchmarks/bench_cost.py [--sizes 224,384] [--workers 2] [--models 'vit_*'] [--no-train]
Peak RSS is this process's ru_maxrss (importing torch alone is ~0.7 GB of it); with --workers N,
the workers' peaks are added, since each imports torch again.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _records(job: tuple[str, tuple[int, ...], bool]) -> list[dict]:
    """The rows `zoo.compare --metrics cost,memory[,train]` writes, through the same run_task."""
    from analysis.size import Size
    from zoo.runs.tasks import Task, run_task

    name, sizes, train = job
    out = []
    for size in sizes:
        start = time.perf_counter()
        row = run_task(Task.named("cost", name, Size(size, size), train=train))
        row["seconds"] = time.perf_counter() - start
        out.append(row)
    return out


def _worker_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="224,384")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes; each imports torch (~0.7 GB RSS), so 1 keeps the peak lowest")
    parser.add_argument("--models", default="*")
    parser.add_argument("--no-train", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    import zoo

    sizes = tuple(int(s) for s in args.sizes.split(","))
    jobs = [(name, sizes, not args.no_train) for name in zoo.list_models(args.models)]
    # Longest first so the two workers finish together.
    jobs.sort(key=lambda j: any(k in j[0] for k in ("effnet", "bit", "convnext", "swin", "regnet")), reverse=True)
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(_records, jobs))
            worker_rss = sum(pool.map(_worker_rss_mb_job, range(args.workers)))
    else:
        results, worker_rss = [_records(j) for j in jobs], 0.0
    wall = time.perf_counter() - start
    rows = [r for batch in results for r in batch]
    print(f"{'model':<20}{'size':>5}{'tokens':>7}{'params':>13}{'GMACs':>10}{'attn%':>7}"
          f"{'act MiB':>9}{'train GMACs':>12}{'train MiB':>10}  uncounted  path")
    for r in rows:
        if r.get("skipped") or r.get("failed"):
            print(f"{r['model']:<20}{r['img_size']:>5}  {r.get('skipped') or r.get('failed')}")
            continue
        print(f"{r['model']:<20}{r['img_size']:>5}{str(r['tokens'] or '-'):>7}{r['params']:>13,}"
              f"{r['macs'] / 1e9:>10.2f}{100 * r['attn_share']:>7.2f}{r['act_peak_bytes'] / 2**20:>9.1f}"
              f"{(r['train_macs'] or 0) / 1e9:>12.2f}{(r['train_act_peak_bytes'] or 0) / 2**20:>10.1f}"
              f"  {','.join(r['uncounted_ops']) or '-'}  {r['attn_path']}")
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    print(f"\n{len(rows)} records, {len(jobs)} models x {len(sizes)} sizes, workers={args.workers}")
    print(f"wall time: {wall:.1f} s (this process's CPU: user {cpu.ru_utime:.1f} s, sys {cpu.ru_stime:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f})")
    if args.workers > 1:
        print(f"peak RSS: main {self_rss:.0f} MiB, main + workers summed {self_rss + worker_rss:.0f} MiB")
    else:
        print(f"peak RSS: {self_rss:.0f} MiB")


def _worker_rss_mb_job(_: int) -> float:
    time.sleep(0.2)   # NB: spreads the probes over both workers; each reports its own peak
    return _worker_rss_mb()


if __name__ == "__main__":
    main()
