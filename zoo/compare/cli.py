"""`python -m zoo.compare`: measure a list of backbones and print the comparison.

Cost (params, MACs, attention share) and activation memory are counted exactly on the meta device;
throughput and latency are measured on the chosen device. Every row is appended to
<out>/results/*.jsonl the moment it is measured; `python -m zoo.report` builds reports from them.

exit status: 0 every requested row measured (rows a model's size rule skips included); 1 some
measurements failed (one line each on stderr, then a count), or a row could not be written (disk
full; the row is cut back off); 2 bad input (one line, nothing written); 130 interrupted (Ctrl-C),
143 terminated (SIGTERM): one line, every finished row kept, a measuring child process ended.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import sys

from ..errors import UsageError, UsageParser, ZooError
from ..options import (BACKENDS, COMPILE_MODES, FORMATS, OPTIMIZERS, datasheet_devices,  # noqa: F401 - zoo.compare
                       add_options, pretraining_option)  # names them
from ..options.compare import DEFAULT_METRICS, METRICS, checked
from ..options.values import MAX_BATCH, MAX_SIDE
from ..console.signals import Terminated, exit_status, handles_sigterm
from ..runs.executors import EXECUTORS
from ..store.store import StoreWriteError
from ..store.user_cache import disabled
from ..runs.plan import plan_tasks

log = logging.getLogger("zoo.compare")


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_options(p, "--models", models=dict(required=True))
    p.add_argument("--resolutions", help=f"comma list of input sides or HEIGHTxWIDTH (800x1344), at most {MAX_SIDE:,} "
                                         f"px a side (default: each model's native one)")
    add_options(p, "--pad-to")
    p.add_argument("--batch-sizes", default="1", help=f"comma list, at most {MAX_BATCH:,} (default 1); or 'sweep' "
                                                      f"with --latency-target-ms")
    p.add_argument("--latency-target-ms", help="with --batch-sizes sweep: double the batch from 1 until the latency "
                                               "of a batch passes this (measured: its p99; with --predict: the "
                                               "expected mean, no tail modelled); the largest within is marked")
    add_options(p, "--features", "--optimizer", "--frozen-stages", "--detector", "--segmenter")
    p.add_argument("--slide", metavar="CROP,STRIDE", help="with --segmenter: also count mmseg's sliding-window test "
                                                          "(windows of CROP px every STRIDE px, the last flush with "
                                                          "the edge; the ADE20K configs' 512,341): counted, not timed")
    p.add_argument("--metrics", help=f"comma list of {', '.join(METRICS)} (default {','.join(DEFAULT_METRICS)}; "
                                     f"with --slide cost,memory)")
    add_options(p, "--device", "--dtype", "--threads")
    p.add_argument("--format", default="table", help=f"stdout format: {', '.join(FORMATS)}")
    add_options(p, "--weights", "--pretraining", "--out", "--no-save", "--quick", "--iters", "--min-seconds",
                "--channels-last", "--compile")
    add_options(p, "--backend", backend=dict(help=f"timing runtime, or a comma list of them timed side by side, "
                                                  f"interleaved: {', '.join(BACKENDS)} (default eager; onnxruntime "
                                                  f"needs pip install \"archzoo[onnx]\")"))
    p.add_argument("--resume", action="store_true", help="skip rows already in results/ for these settings")
    p.add_argument("--reprobe-peak", action="store_true",
                   help="probe the GEMM peak again instead of using the cached one (user cache, results/peaks.json)")
    add_options(p, "--no-cache")
    p.add_argument("--verbose", action="store_true", help="show other libraries' logs (ONNX exporter, optimizer) "
                                                          "on stderr instead of keeping them in results/logs/")
    add_options(p, "--predict", "--price-per-hour", "--reparam",
                predict=dict(help=f"measure nothing: the calibrated estimate on datasheet GPUs ({datasheet_devices()}), "
                                  f"comma-separated (L4,A100,H100), marked predicted, with its error band: each "
                                  f"device's rows, per model the winner and whether the band separates it (two "
                                  f"devices at the same batches: their break-even price ratio); the rows are appended "
                                  f"to <out>/results/predicted.jsonl unless --no-save"))
    add_options(p, "--tf32", "--torch", "--attention")
    add_options(p, "--epochs", "--train-images", "--gpus")
    p.add_argument("--executor", default="local", help=f"{', '.join(EXECUTORS)} (default local)")
    p.add_argument("--ray-address", default=None, help="with --executor ray: auto, or HOST:PORT of a cluster")
    return p


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line parsed and checked (zoo.options.compare.checked): one UsageError before any work."""
    return checked(build_parser().parse_args(argv))


def plan_of(args: argparse.Namespace):
    """The tasks the checked options ask for (zoo.runs.plan), the rows a size rule skips among them."""
    return plan_tasks(args.models, args.resolutions, args.batch_sizes, args.metrics, dtype=args.dtype,
                      features=args.features, frozen_stages=args.frozen_stages, detector=args.detector,
                      segmenter=args.segmenter, optimizer=args.optimizer, slide=args.slide,
                      timing=args.timing, backends=args.backends, pad_to=args.pad_to)


def run(args: argparse.Namespace, plan) -> list[dict]:
    from ..console.progress import progress_tracker
    from ..runs.executors import executor
    from ..runs.peaks import PeakCache
    from ..store.run_logs import LOG_DIR_ENV, VERBOSE_ENV, environment
    from ..runs.scheduler import schedule
    from ..store.schema import row_size
    from ..store.store import ResultStore

    store = None if args.no_save else ResultStore(args.out)
    rows: list[dict] = list(plan.skipped)
    logs = {LOG_DIR_ENV: str(store.dir / "logs") if store else None, VERBOSE_ENV: "1" if args.verbose else None}
    with store.locked() if store else contextlib.nullcontext(), environment(logs):
        scheduled = schedule(plan.tasks, store.rows() if args.resume else ())
        if args.resume:
            log.info("resume: %d of %d rows already measured", len(scheduled.reused), len(plan.tasks))
        rows += scheduled.reused
        peaks = PeakCache(store.dir if store else None, reprobe=args.reprobe_peak)
        with progress_tracker(total=len(scheduled.tasks), description="measuring", enabled=None) as advance:
            def on_row(row: dict) -> None:
                if store:
                    store.append(row)
                rows.append(row)
                advance(f"{row['kind']} {row['model']} {row_size(row).label} px")

            for row in plan.skipped:      # stored too, so the report lists what a size rule skipped
                if store:
                    store.append(row)
            if args.sweep:
                from ..runs.batch_sweep import run_sweeps

                run_sweeps(scheduled, on_row, peaks, args.latency_target_ms)
            else:
                executor(args.executor, args.ray_address)(scheduled, on_row, peaks)
    return rows


def print_records(records: list[dict], fmt: str) -> None:
    from .display import to_csv, to_json, to_markdown, to_rich

    if fmt == "json":
        sys.stdout.write(to_json(records) + "\n")
    elif fmt == "csv":
        sys.stdout.write(to_csv(records))
    elif fmt == "markdown":
        sys.stdout.write(to_markdown(records))
    else:
        from rich.console import Console

        from ..answers.text import UNBOUNDED_WIDTH

        console = Console()     # a terminal's own width; piped or redirected, as wide as the table needs
        width = console.width if console.is_terminal else 160      # past it, few records are turned on their side
        Console(width=width if console.is_terminal else UNBOUNDED_WIDTH).print(to_rich(records, width))


@handles_sigterm("zoo.compare")     # after the measurements (while printing): one line, nothing left to keep
def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    args = None
    try:
        args = parse(argv)
        plan = plan_of(args)
        if args.predict is not None:
            from .predict import print_predictions, print_train_predictions

            return (print_train_predictions if args.metrics == ["train"] else print_predictions)(plan, args)
        with disabled(args.no_cache):
            rows = run(args, plan)
    except StoreWriteError as e:         # a full disk: the row was cut back, the run stops
        print(f"zoo.compare: error: {e}", file=sys.stderr)
        return 1
    except (UsageError, ZooError) as e:  # before any work, or found once it starts (Ray)
        print(f"zoo.compare: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        where = "" if args is None or args.no_save else f" in {args.out / 'results'}"
        how = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        print(f"zoo.compare: {how}; every row finished before it is kept{where}", file=sys.stderr)
        return exit_status(e)
    from .display import merge
    from ..store.schema import row_size

    print_records(merge(rows, args.weights, args.pretraining), args.format)
    failed = [r for r in rows if r.get("failed")]
    for row in failed:
        print(f"zoo.compare: failed: {row['kind']} {row['model']} {row_size(row).label} px "
              f"batch {row['batch_size']}: {row['failed']}", file=sys.stderr)
    if not args.no_save:
        print(f"zoo.compare: rows appended under {args.out / 'results'}; "
              f"`python -m zoo.report --results {shlex.quote(str(args.out))}` builds the reports from them",
              file=sys.stderr)
    if failed:
        print(f"zoo.compare: {len(failed)} of {len(rows)} measurements failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
