"""Time to answer: the wall time of archzoo's everyday commands as whole processes, cold and warm user cache.

    python benchmarks/time_to_answer.py [--repeats 3] [--only compare,select] [--json out.json]

Each command runs as `python -m ...` in a fresh process, with its own cache folder ($ARCHZOO_CACHE_DIR in
a temporary folder: never your ~/.cache/archzoo) and a new --out folder every run. cold: an empty
user cache (counts and the GEMM peak made afresh). warm: after one warm-up run filled it. Medians of
--repeats runs, with the command's own CPU seconds (all its processes: a steadier figure than wall
time on a shared machine); `others' CPU` is the share of the machine's CPU other processes used meanwhile
(from /proc/stat minus the command's own CPU time): well above 0 means the numbers are inflated.
Goals (issue 22, 2-core dev machine, idle): compare < 10 s (new folder, warm cache), select < 3 s (warm),
report < 5 s (committed results), compare all cost+memory < 5 s, import zoo < 0.8 s.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COMMANDS = {  # name -> (argv after `python`, goal in seconds, which cache state the goal is judged on)
    "compare": (["-m", "zoo.compare", "--models", "vit_b16,swin_t,convnext_t", "--out", "{out}"], 10.0, "warm"),
    "select": (["-m", "zoo.select", "--resolution", "224", "--max-gmacs", "20"], 3.0, "warm"),
    "report": (["-m", "zoo.report", "--results", str(REPO), "--out", "{out}"], 5.0, "warm"),
    "compare_all": (["-m", "zoo.compare", "--models", "all", "--resolutions", "224,384", "--metrics", "cost,memory",
                     "--out", "{out}"], 5.0, "warm"),
    "import": (["-c", "import zoo"], 0.8, "warm"),
}
SHOWN = {"compare": "`zoo.compare --models vit_b16,swin_t,convnext_t` (new folder)",
         "select": "`zoo.select --resolution 224 --max-gmacs 20` (33 models)",
         "report": "`zoo.report` on the committed results",
         "compare_all": "`zoo.compare --models all --resolutions 224,384 --metrics cost,memory`",
         "import": '`python -c "import zoo"`'}


def _machine_cpu() -> tuple[float, float] | None:
    from analysis.timing.contention import _machine_cpu_seconds

    return _machine_cpu_seconds()


def run_once(argv: list[str], cache: Path, scratch: Path) -> tuple[float, float | None, float]:
    """(wall seconds, others' CPU share, the command's CPU seconds) of one run in a fresh process."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("ARCHZOO_NO_CACHE", None)
    cpu_before, own_before, start = _machine_cpu(), os.times(), time.perf_counter()
    done = subprocess.run([sys.executable, *[a.replace("{out}", str(out)) for a in argv]], cwd=out, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    cpu_after, own_after = _machine_cpu(), os.times()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    share = None
    own = (own_after.children_user + own_after.children_system) - (own_before.children_user +
                                                                    own_before.children_system)
    if cpu_before and cpu_after and cpu_after[1] > cpu_before[1]:
        share = max(0.0, (cpu_after[0] - cpu_before[0] - own) / (cpu_after[1] - cpu_before[1]))
    return wall, share, own


def measure(name: str, repeats: int, scratch: Path) -> dict:
    argv, goal, judged = COMMANDS[name]
    cold = [run_once(argv, Path(tempfile.mkdtemp(dir=scratch)), scratch) for _ in range(repeats)]
    cache = Path(tempfile.mkdtemp(dir=scratch))
    run_once(argv, cache, scratch)                       # warm-up: fills the cache
    warm = [run_once(argv, cache, scratch) for _ in range(repeats)]
    result = {"command": name, "goal_s": goal, "judged_on": judged,
              "cold_s": statistics.median(r[0] for r in cold), "warm_s": statistics.median(r[0] for r in warm),
              "cold_cpu_s": statistics.median(r[2] for r in cold), "warm_cpu_s": statistics.median(r[2] for r in warm),
              "cold_runs_s": [round(r[0], 2) for r in cold], "warm_runs_s": [round(r[0], 2) for r in warm],
              "others_cpu": statistics.median([r[1] for r in cold + warm if r[1] is not None] or [float("nan")])}
    result["met"] = result[f"{judged}_s"] < goal
    return result


def machine() -> str:
    from analysis.timing.fingerprint import available_cores, cpu_model_name, package_version, torch_version

    return (f"{cpu_model_name() or platform.processor()}, {available_cores()} cores, Python "
            f"{platform.python_version()}, torch {torch_version()}, timm {package_version('timm')}")


def table(results: list[dict], repeats: int) -> str:
    lines = ["| command | goal | cold cache | warm cache | CPU s cold / warm | others' CPU | goal met |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {SHOWN[r['command']]} | < {r['goal_s']:g} s | {r['cold_s']:.2f} s | {r['warm_s']:.2f} s | "
                     f"{r['cold_cpu_s']:.1f} / {r['warm_cpu_s']:.1f} | {r['others_cpu']:.0%} | "
                     f"{'yes' if r['met'] else 'no'} ({r['judged_on']}) |")
    return ("\n".join(lines) + f"\n\nwall-clock medians of {repeats} whole-process runs (CPU s: the command's own CPU "
            f"time, all its processes); {machine()}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help=f"comma list of {', '.join(COMMANDS)} (default: all)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(COMMANDS)
    for name in names:
        if name not in COMMANDS:
            parser.error(f"--only: unknown command {name!r}; expected some of {', '.join(COMMANDS)}")
    results = []
    with tempfile.TemporaryDirectory(prefix="archzoo-tta-") as scratch:
        for name in names:
            results.append(measure(name, args.repeats, Path(scratch)))
            r = results[-1]
            print(f"{name}: cold {r['cold_runs_s']} s, warm {r['warm_runs_s']} s, others' CPU {r['others_cpu']:.0%}",
                  file=sys.stderr, flush=True)
    print(table(results, args.repeats))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
