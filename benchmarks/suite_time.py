"""How long the test suite takes here, and where the time goes: the README's test command with --junitxml, then
the wall time, pytest's own time, the tests' worker-seconds and the slowest files, with the machine and its load.

    python benchmarks/suite_time.py [--workers 2] [--top 12] [-- extra pytest args]

The docs quote no suite times (they depend on the machine and on what else runs): this prints them. A time is
comparable only with one taken on the same machine at a similar load (the 1-minute load average is printed at the
start and the end; on a shared machine run it when `uptime` is near 0).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (-n; default 2)")
    parser.add_argument("--top", type=int, default=12, help="slowest files shown (default 12)")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-n", args.workers, "--dist", "loadfile", "-q",
                   "-p", "no:cacheprovider", f"--junitxml={junit}", *args.extra]
        load_before, started = os.getloadavg()[0], time.monotonic()
        done = subprocess.run(command, cwd=ROOT)
        wall, load_after = time.monotonic() - started, os.getloadavg()[0]
        suite = ET.parse(junit).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    per_file: dict[str, float] = defaultdict(float)
    for case in suite.iter("testcase"):
        per_file[case.get("classname", "?").rsplit(".", 1)[0]] += float(case.get("time", 0))
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    print(f"\n{cpu_model()}, {os.cpu_count()} cores, {args.workers} workers; 1-minute load {load_before:.1f} at the "
          f"start, {load_after:.1f} at the end")
    print(f"wall {wall:.0f} s, pytest {float(suite.get('time', 0)):.0f} s, {sum(per_file.values()):.0f} "
          f"worker-seconds of tests; {counts['tests']} tests, {counts['failures'] + counts['errors']} failed, "
          f"{counts['skipped']} skipped")
    for name, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:6.1f} s  {name}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
