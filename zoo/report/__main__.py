"""`python -m zoo.report [--results DIR] [--out DIR] [--refresh] [--check]`."""
from __future__ import annotations

import argparse
import sys

from .build import build_reports
from .deterministic import check, deterministic_tasks, refresh


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zoo.report", description=__doc__)
    p.add_argument("--results", default=".", help="folder holding results/ (default: the current one)")
    p.add_argument("--out", default=None, help="where to write the reports (default: <results>/reports)")
    p.add_argument("--refresh", action="store_true",
                   help="first count the deterministic rows (cost and memory of every model) into results/")
    p.add_argument("--check", action="store_true",
                   help="fail (exit 1) when committed results/ or reports/ differ from a fresh count")
    args = p.parse_args(argv)
    from analysis.progress import progress_tracker

    if args.refresh or args.check:
        with progress_tracker(total=len(deterministic_tasks()), description="counting") as advance:
            if args.check:
                problems = check(args.results, advance)
            else:
                print(f"{refresh(args.results, advance)} rows appended", file=sys.stderr)
        if args.check:
            for problem in problems:
                print(f"zoo.report --check: {problem}", file=sys.stderr)
            print("reports are current" if not problems else f"{len(problems)} problems", file=sys.stderr)
            return 1 if problems else 0
    for path in build_reports(args.results, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
