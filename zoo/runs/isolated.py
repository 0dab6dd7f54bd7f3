"""The subprocess executor's worker: one task in a fresh Python process.

The parent sends {"task": {...}, "macs": ..., "peak": {...}} as JSON on stdin; the child runs
`run_task` and prints the row as one JSON line, last on stdout, after a marker. A child that dies
(killed by the OS out-of-memory killer, a segfault in a kernel) or hangs past the timeout becomes a
failed row in the one failed-row format.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from .tasks import Task, failed_row, run_task

RESULT_PREFIX = "ARCHZOO_ROW "
SOURCE_ROOT = Path(__file__).resolve().parents[2]   # holds zoo/ and analysis/ (a checkout or site-packages)


def run_isolated(task: Task, macs: Optional[int] = None, peak: Optional[dict] = None,
                 timeout_s: Optional[float] = None) -> dict:
    payload = json.dumps({"task": task.to_json(), "macs": macs, "peak": peak})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE_ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        completed = subprocess.run([sys.executable, "-m", "zoo.runs.isolated"], input=payload, env=env,
                                   capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return failed_row(task, f"TimeoutError: the measurement's process ran past {timeout_s} s")
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    last = [line for line in completed.stderr.strip().splitlines() if line.strip()][-1:] or [""]
    return failed_row(task, f"ChildProcessError: the measurement's process exited {completed.returncode}: "
                            f"{last[0][:200]}")


if __name__ == "__main__":      # the child: one task from stdin, its row on stdout
    request = json.loads(sys.stdin.read())
    row = run_task(Task.from_json(request["task"]), macs=request["macs"], peak=request["peak"])
    sys.stdout.write(RESULT_PREFIX + json.dumps(row) + "\n")
