"""`python -m zoo.report [--results DIR] [--out DIR] [--refresh] [--check] [--weights W] [--pretraining G]`:
reports from results/ alone.

exit status: 0 done (or, with --check, everything current); 1 --check found stale rows or files;
2 bad input (a --results folder that does not exist, an --out that cannot be written), nothing written;
130 interrupted, 143 terminated (SIGTERM).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ..errors import UsageError, UsageParser
from ..options.values import pretraining_option, weights_option
from ..store.data_dir import out_or_default
from ..store.safe_io import check_out_dir, kind_of, refuse_symlinked_folder, usable_path
from ..store.user_cache import disabled
from ..console.signals import exit_status, handles_sigterm, interrupted


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = UsageParser(prog="python -m zoo.report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=None, help="folder holding results/ (default: the user data folder "
                                                   "zoo.compare writes to, $ARCHZOO_DATA_DIR or "
                                                   "~/.local/share/archzoo; --results . for a checkout's own)")
    p.add_argument("--out", default=None, help="where to write the reports (default: <results>/reports)")
    p.add_argument("--refresh", action="store_true",
                   help="first count the deterministic rows (cost and memory of every model) into results/")
    p.add_argument("--check", action="store_true",
                   help="fail (exit 1) when committed results/ or reports/ differ from a fresh count")
    p.add_argument("--weights", default="default", help="whose accuracy the accuracy section leads with: default "
                                                       "(timm's evaluation of what timm.create_model(..., "
                                                       "pretrained=True) loads), paper, best (default: default)")
    p.add_argument("--pretraining", help="comma list of pretraining groups the shown checkpoints are chosen among")
    p.add_argument("--no-cache", action="store_true",
                   help="count the worked questions' models again instead of reading the user cache")
    args = p.parse_args(argv)
    args.weights, args.pretraining = weights_option(args.weights), pretraining_option(args.pretraining)
    if args.check and (args.weights != "default" or args.pretraining):
        raise UsageError("--check compares the committed reports, built with --weights default and every "
                         "pretraining group; drop --weights/--pretraining")
    default = args.results is None
    args.results = out_or_default(args.results)
    results = Path(args.results)
    usable_path(args.results, "--results")   # empty, a name too long, a symlink loop: one line, not a traceback
    if default and not results.exists() and not args.refresh:
        raise UsageError(f"no rows yet in {results} (where zoo.compare writes by default): run `python -m "
                         f"zoo.compare` first, or give --results DIR (--results . for a checkout's own)")
    if not results.is_dir():
        raise UsageError(f"--results: {results} is not a folder" if results.exists() else
                         f"--results: {results} does not exist")
    if not args.refresh and not (results / "results").is_dir():
        raise UsageError(f"--results: {results} has no results/ folder (run `python -m zoo.compare --out "
                         f"{results}` first)")
    if args.out is not None:
        args.out = check_out_dir(args.out)
    elif not args.check:
        refuse_symlinked_folder(results / "reports", "--results")   # a link would carry the reports elsewhere
        check_out_dir(str(results / "reports"), "--results")
    if not args.check:      # report files are renamed into place (a link or FIFO there is replaced): a folder is not
        from .build import REPORT_FILES

        out = args.out or results / "reports"
        for name in REPORT_FILES:
            if kind_of(out / name) == "a folder":
                raise UsageError(f"--out: {out / name} is a folder, not a report file (remove it)")
    return args


@handles_sigterm("zoo.report")
def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv)
    except UsageError as e:
        print(f"zoo.report: error: {e}", file=sys.stderr)
        return 2
    from ..console.progress import progress_tracker
    from .build import build_reports

    # warnings: bad lines named once, one line each; --check counts afresh, never from the user cache
    with warnings.catch_warnings(record=True) as caught, disabled(args.no_cache or args.check):
        warnings.simplefilter("always")
        try:
            if args.refresh or args.check:
                from ..reference import check, refresh        # counts: torch loads only here
                from .deterministic import deterministic_tasks

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
            for path in build_reports(args.results, args.out, args.weights, args.pretraining):
                print(path)
        except UsageError as e:   # e.g. another run holds results/ during --refresh
            print(f"zoo.report: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as e:
            print(f"zoo.report: {interrupted(e)}", file=sys.stderr)
            return exit_status(e)
        except OSError as e:      # a full disk: each report is written whole or not at all (write_atomic)
            where = f" {e.filename}" if e.filename else ""
            print(f"zoo.report: error: cannot write{where}: {e.strerror or e}", file=sys.stderr)
            return 1
    for warning in {str(w.message) for w in caught}:
        print(f"zoo.report: warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from ..console.exit import exit_without_collecting

    exit_without_collecting(main())
