"""Run one measurement in a fresh Python process, so allocator, thread-pool and compile caches
from one model cannot leak into the next.

The parent sends {"model": name, "settings": {...}} as JSON on stdin; the child runs
`analysis.timing.measure_throughput` and prints the record as one JSON line, last on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULT_PREFIX = "ARCHZOO_RECORD "


def run_isolated(model_name: str, settings: dict, timeout_s: Optional[float] = None) -> dict:
    """measure_throughput(model_name, **settings) in a subprocess; a crash becomes a recorded error.

    NB: a child killed by the OS (e.g. the Linux OOM killer) returns a record with imgs_per_s None and
    the exit status and stderr tail in `error`, rather than raising.
    """
    payload = json.dumps({"model": model_name, "settings": {**settings, "isolate": False}})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "analysis.isolation"], input=payload, capture_output=True, text=True,
            cwd=REPO_ROOT, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return _failed_record(model_name, settings, f"isolated run timed out after {timeout_s} s")
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            record = json.loads(line[len(RESULT_PREFIX):])
            record["isolated"] = True
            return record
    stderr_tail = " | ".join(completed.stderr.strip().splitlines()[-3:])
    return _failed_record(model_name, settings, f"isolated run exited {completed.returncode}: {stderr_tail}")


def _failed_record(model_name: str, settings: dict, error: str) -> dict:
    return {"model": model_name, "img_size": settings.get("img_size"), "mode": settings.get("mode"),
            "requested_batch_size": settings.get("batch_size"), "batch_size": None, "error": error,
            "imgs_per_s": None, "latency_ms_p50": None, "latency_ms_p90": None, "latency_ms_p99": None,
            "cv": None, "device": settings.get("device"), "dtype": settings.get("dtype"),
            "threads": settings.get("threads"), "peak_flops": settings.get("peak_flops"), "mfu": None,
            "foreign_cpu_share": None, "isolated": True}


def _child_main() -> None:
    from analysis.timing import measure_throughput

    request = json.loads(sys.stdin.read())
    record = measure_throughput(request["model"], **request["settings"])
    sys.stdout.write(RESULT_PREFIX + json.dumps(record) + "\n")


if __name__ == "__main__":
    _child_main()
