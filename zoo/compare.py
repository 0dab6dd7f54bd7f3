"""`python -m zoo.compare`: measure a list of backbones and print the comparison.

Cost (params, MACs, attention share) and activation memory are counted exactly on the meta device;
throughput and latency are measured on the chosen device. Every row is appended to
<out>/results/*.jsonl the moment it is measured; `python -m zoo.report` builds reports from them.
"""
from __future__ import annotations

import argparse
import logging
import sys

from .plan import (DEFAULT_METRICS, DEVICES, FORMATS, METRICS, UsageError, check_device, check_dtype, check_out_dir,
                   choice, model_names, plan_tasks, positive_ints, split_list)
from .spec import ZooError

log = logging.getLogger("zoo.compare")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit; we want one line and exit 2
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m zoo.compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", required=True,
                   help="comma list: registry names, wildcards (swin_*), 'all', or timm:<name>")
    p.add_argument("--resolutions", help="comma list of input sides (default: each model's native one)")
    p.add_argument("--batch-sizes", default="1", help="comma list (default 1)")
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help=f"comma list of {', '.join(METRICS)}")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    p.add_argument("--dtype", default="fp32", help="fp32, bf16 or fp16 (autocast)")
    p.add_argument("--threads", help="CPU threads for timing (default: all cores)")
    p.add_argument("--format", default="table", help=f"stdout format: {', '.join(FORMATS)}")
    p.add_argument("--out", default=".", help="folder for results/ (default: the current one)")
    p.add_argument("--no-save", action="store_true", help="write nothing, only print")
    p.add_argument("--quick", action="store_true", help="short throughput runs")
    p.add_argument("--resume", action="store_true", help="skip rows already in results/ for these settings")
    p.add_argument("--executor", default="local", help="local (default) or ray")
    p.add_argument("--ray-address", default=None, help="with --executor ray: auto, or HOST:PORT of a cluster")
    return p


def parse(argv: list[str] | None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    args.models = model_names(args.models)
    args.resolutions = positive_ints(args.resolutions, "resolutions") if args.resolutions is not None else None
    args.batch_sizes = positive_ints(args.batch_sizes, "batch-sizes")
    args.metrics = [choice(m, METRICS, "metric") for m in split_list(args.metrics, "metrics")]
    args.threads = positive_ints(args.threads, "threads")[0] if args.threads is not None else None
    choice(args.format, FORMATS, "format")
    check_dtype(args.dtype)
    choice(args.executor, ("local", "ray"), "executor")
    if "throughput" in args.metrics:  # with Ray the GPUs are the workers', not this machine's
        check_device(args.device) if args.executor == "local" else choice(args.device, DEVICES, "device")
    if not args.no_save:
        args.out = check_out_dir(args.out)
    if args.executor == "ray":
        from .ray_executor import check_ray

        check_ray(args.ray_address)
    return args


def run(args: argparse.Namespace, plan) -> list[dict]:
    from analysis.progress import progress_tracker

    from .executors import executor
    from .store import ResultStore
    from .tasks import row_key, task_key

    store = None if args.no_save else ResultStore(args.out)
    tasks = plan.tasks
    rows: list[dict] = list(plan.skipped)
    if args.resume and store:
        previous = {row_key(r): r for r in store.rows() if "failed" not in r}
        kept = [t for t in tasks if task_key(t) not in previous]
        rows += [previous[task_key(t)] for t in tasks if task_key(t) in previous]
        log.info("resume: %d of %d rows already measured", len(tasks) - len(kept), len(tasks))
        tasks = kept
    with progress_tracker(total=len(tasks), description="measuring", enabled=None) as advance:
        def on_row(row: dict) -> None:
            if store:
                store.append(row)
            rows.append(row)
            advance(f"{row['kind']} {row['model']} {row['img_size']}px")

        executor(args.executor, args.ray_address)(tasks, on_row)
    return rows


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        args = parse(argv)
        plan = plan_tasks(args.models, args.resolutions, args.batch_sizes, args.metrics, args.dtype,
                          args.device, args.threads, args.quick)
    except (UsageError, ZooError) as e:
        print(f"zoo.compare: error: {e}", file=sys.stderr)
        return 2
    from .display import merge, to_csv, to_json, to_markdown, to_rich

    try:
        records = merge(run(args, plan))
    except UsageError as e:  # found only once work starts, e.g. a Ray cluster that refuses this driver
        print(f"zoo.compare: error: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(to_json(records) + "\n")
    elif args.format == "csv":
        sys.stdout.write(to_csv(records))
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(records))
    else:
        from rich.console import Console

        Console(width=max(160, Console().width)).print(to_rich(records))
    if not args.no_save:
        log.info("rows appended under %s; `python -m zoo.report --results %s` builds the reports",
                 args.out / "results", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
