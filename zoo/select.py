"""`python -m zoo.select`: the backbones that fit a budget at one resolution, ranked, with the Pareto front per
pretraining group, and every other model excluded with the first constraint it broke and by how much.

Constraints are applied in this order: the model's size rule; published accuracy (--pretraining, which
also chooses the checkpoint shown; --weights-available; --min-top1, of the checkpoint --weights picks);
counted cost on the meta device (--max-params, --max-gmacs, --max-act-mib, --max-serve-mib); then measured
speed (--max-latency-ms, --min-imgs-per-s), timing only the survivors, cheapest (GMACs) first, and reusing
rows under <out>/results/ that `zoo.compare --resume` would reuse (same key). Measured rows are appended
there unless --no-save.

exit status: 0 a selection was printed (the shortlist may be empty); 2 bad input (one line on stderr,
nothing written); 130 interrupted, 143 terminated (SIGTERM) (timed rows finished before it are kept).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .errors import UsageError, UsageParser, ZooError
from .models.cards import PRETRAINING
from .models.spec import Size
from .runs.plan import choice
from .runs.safe_io import strict_dumps
from .runs.user_cache import disabled
from .signals import exit_status, handles_sigterm, interrupted
from .shortlist import FORMATS, RANKS, num, select  # noqa: F401 - select: the API, as `from zoo.select import select`

def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.select", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resolution", default="224", help="input side, or HEIGHTxWIDTH (default 224)")
    p.add_argument("--models", default="all", help="comma list: names, wildcards (swin_*), timm:<name> "
                                                   "(default: the whole registry)")
    p.add_argument("--max-gmacs", help="GMACs per image")
    p.add_argument("--max-params", help="parameters, millions")
    p.add_argument("--max-act-mib", help="activation peak of one forward at the batch, MiB")
    p.add_argument("--max-serve-mib", help="weights at --dtype + activation peak at the batch, MiB")
    p.add_argument("--min-top1", help="ImageNet-1k top-1 (%%) published at this resolution")
    p.add_argument("--pretraining", help=f"comma list of {', '.join(PRETRAINING)}: the checkpoint shown is "
                                         f"chosen among these groups' (a model with none is excluded)")
    p.add_argument("--weights", default="default", help="whose accuracy: default (timm's evaluation of the "
                                                       "checkpoint timm.create_model(..., pretrained=True) loads at "
                                                       "the size), paper (the authors'), best (timm's most accurate)")
    p.add_argument("--weights-available", action="store_true",
                   help="only models with timm weights evaluated at this resolution (packaged table)")
    p.add_argument("--max-latency-ms", help="measured latency of one batch (see --latency-stat)")
    p.add_argument("--latency-stat", default="p50", help="p50 (default) or p99")
    p.add_argument("--min-imgs-per-s", help="measured images per second")
    p.add_argument("--device", default="auto", help="for timing: auto, cpu, cuda (default auto)")
    p.add_argument("--dtype", default="fp32", help="fp32, bf16, fp16 (counting and timing; default fp32)")
    p.add_argument("--batch-size", default="1", help="a batch, or auto with --max-serve-mib: the largest that "
                                                     "fits (default 1)")
    p.add_argument("--threads", help="CPU threads for timing (default: all available cores)")
    p.add_argument("--quick", action="store_true", help="short timing runs")
    p.add_argument("--rank", default="top1", help=f"{', '.join(RANKS)} (default top1)")
    p.add_argument("--format", default="table", help=f"{', '.join(FORMATS)} (default table)")
    p.add_argument("--out", default=".", help="folder whose results/ timed rows are reused from and appended to")
    p.add_argument("--no-save", action="store_true", help="write nothing (stored rows are still reused)")
    p.add_argument("--no-cache", action="store_true", help="count again: neither read nor write the user cache")
    return p


def _cells(row: dict, timed: bool) -> list:
    top1 = None if row["top1"] is None else f"{row['top1']:g} @{row['top1_img_size']} ({row['top1_source']})"
    cells = [row["model"] + (" *" if row["pareto"] else ""), Size.of(row["img_size"]).label, row["batch_size"],
             num(row["params_m"]),
             num(row["gmacs"]), num(row["act_mib"]), num(row["serve_mib"])]
    if timed:
        cells += [None if row.get(k) is None else num(row[k]) for k in ("latency_ms_p50", "latency_ms_p99",
                                                                         "imgs_per_s")]
    return cells + [top1, row["weights_short"], row["pretraining"], None if row["imagenet_v2"] is None else f"{row['imagenet_v2']:g}",
                    None if row["sketch"] is None else f"{row['sketch']:g}"]


def render(result: dict, fmt: str) -> str:
    """The selection as markdown, or as a plain-text table (JSON is json.dumps of `result`)."""
    from .markdown import markdown_table

    timed = any("latency_ms_p50" in r for r in result["shortlist"])
    headers = ["model", "res", "batch", "params (M)", "GMACs", "act (MiB)", "serve (MiB)"]
    headers += ["p50 (ms)", "p99 (ms)", "img/s"] if timed else []
    headers += ["top-1 @res (source)", "weights", "pretraining", "IN-V2", "Sketch"]
    rows = [_cells(r, timed) for r in result["shortlist"]]
    axes, query = result["query"]["pareto_axes"], result["query"]
    title = (f"shortlist at {Size.of(query['resolution']).label} px, ranked by {query['rank']}: {len(rows)} of "
             f"{len(query['models'])} (* on the Pareto front of {axes['y']} vs {axes['x']} in its pretraining group)")
    if fmt == "markdown":
        table = markdown_table(headers, rows).rstrip("\n")
    else:
        from rich.console import Console
        from rich.table import Table

        grid = Table(show_edge=False, pad_edge=False)
        for h in headers:
            grid.add_column(h, justify="left" if h in ("model", "top-1 @res (source)", "weights", "pretraining") else "right")
        for r in rows:
            grid.add_row(*("-" if c is None else str(c) for c in r))
        console = Console(width=200, record=True, file=open(os.devnull, "w"))
        console.print(grid)
        table = console.export_text().rstrip("\n")
    lines = [title, "", table, "", "Pareto front per pretraining group:"]
    lines += [f"- {group}: {', '.join(models)}" for group, models in result["pareto"].items()] or ["- (none)"]
    lines += ["", f"excluded ({len(result['excluded'])}):"]
    lines += [f"- {e['model']}: {e['reason']}" for e in result["excluded"]] or ["- (none)"]
    return "\n".join(lines) + "\n"


@handles_sigterm("zoo.select")
def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
        choice(args.format, FORMATS, "format")
        with disabled(args.no_cache):
            result = select(args.models, args.resolution, max_gmacs=args.max_gmacs, max_params=args.max_params,
                            max_act_mib=args.max_act_mib, max_serve_mib=args.max_serve_mib, min_top1=args.min_top1,
                            pretraining=args.pretraining, weights_available=args.weights_available,
                            max_latency_ms=args.max_latency_ms, latency_stat=args.latency_stat,
                            min_imgs_per_s=args.min_imgs_per_s, device=args.device, dtype=args.dtype,
                            batch_size=args.batch_size, threads=args.threads, quick=args.quick, out=args.out,
                            save=not args.no_save, rank=args.rank, weights=args.weights)
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"zoo.select: {interrupted(e)}; timed rows finished before it are kept", file=sys.stderr)
        return exit_status(e)
    if args.format == "json":
        sys.stdout.write(strict_dumps(result, indent=2) + "\n")
    else:
        sys.stdout.write(render(result, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
