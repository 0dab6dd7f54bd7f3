"""Wall time of one sweep (every registry model; cost and memory; 224 and 384 px) on the local executor
and on a local Ray cluster of two worker nodes (the head has no CPU), timed side by side.

    python benchmarks/ray_sweep.py [--rounds 2] [--worker-cpus 1]

Each time is one `python -m zoo.compare` process from start to exit: imports, connecting to Ray and
Ray's worker start-up included; the progress lines tell when, after measuring began, the first and
the last row arrived. Rounds alternate which executor goes first, so load from other
processes on the machine falls on both alike. The cluster's own start-up is reported apart.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the throwaway cluster is test scaffolding, not in the wheel

from ray_cluster import LocalRayCluster  # noqa: E402

SWEEP = ["--models", "all", "--metrics", "cost,memory", "--resolutions", "224,384", "--format", "json"]
NOT_COMPARED = {"env", "failed_attempts"}


PROGRESS = re.compile(r"measuring \[(\d+)/(\d+)\] (\d+)s elapsed")


def first_and_last_row_s(stderr: str) -> tuple[int, int]:
    """Seconds (whole, from the progress lines on stderr) from the start of measuring to the first and last row."""
    seconds = [int(m.group(3)) for m in PROGRESS.finditer(stderr)]
    return (seconds[0], seconds[-1]) if seconds else (-1, -1)


def timed_sweep(out: Path, env: dict, *executor: str) -> tuple[float, list[dict], tuple[int, int]]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "zoo.compare", *SWEEP, "--out", str(out), *executor],
                            cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"sweep {' '.join(executor) or 'local'} failed:\n{result.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "results" / "cost.jsonl").read_text().splitlines()]
    return seconds, rows, first_and_last_row_s(result.stderr)


def measured(rows: list[dict]) -> dict:
    return {(r["model"], r["img_size"]): {k: v for k, v in r.items() if k not in NOT_COMPARED} for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker-cpus", type=int, default=1, help="CPUs of each of the 2 worker nodes")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    started = time.perf_counter()
    with LocalRayCluster(head_cpus=0) as cluster, tempfile.TemporaryDirectory(prefix="ray_sweep") as scratch:
        for _ in range(2):
            cluster.add_worker(num_cpus=args.worker_cpus)
        print(f"cluster start (head with 0 CPUs + 2 workers x {args.worker_cpus} CPU): "
              f"{time.perf_counter() - started:.1f} s")
        driver_env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, **cluster.driver_env}
        seconds: dict[str, list[float]] = {"local": [], "ray": []}
        reference = None
        for round_index in range(args.rounds):
            order = ["local", "ray"] if round_index % 2 == 0 else ["ray", "local"]
            for name in order:
                executor = ["--executor", "ray", "--ray-address", cluster.address] if name == "ray" else []
                took, rows, (first, last) = timed_sweep(Path(scratch) / f"{name}{round_index}", driver_env,
                                                        *executor)
                failed = [r for r in rows if "failed" in r]
                if reference is None:
                    reference = measured(rows)
                elif measured(rows) != reference:
                    raise SystemExit(f"{name} round {round_index + 1}: cost rows differ from the first sweep's")
                seconds[name].append(took)
                print(f"round {round_index + 1} {name:5s}: {took:6.1f} s  ({len(rows)} rows, {len(failed)} failed; "
                      f"rows from {first} s to {last} s after measuring began)")
    local, ray = statistics.median(seconds["local"]), statistics.median(seconds["ray"])
    print(f"median: local {local:.1f} s, ray {ray:.1f} s, speed-up {local / ray:.2f}x; "
          f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
