"""`python -m zoo.select`: the backbones that fit a budget at one resolution, ranked, with the Pareto front per
pretraining group, and every other model excluded with the first constraint it broke and by how much.

Constraints are applied in this order: the model's size rule (naming the nearest sizes it takes); published
accuracy (--pretraining, which also chooses the checkpoint shown; --weights-available; --min-top1, of the
checkpoint --weights picks); counted cost on the meta device (--max-params,
--max-gmacs, --max-act-mib, --max-serve-mib, --max-train-mib), as a classifier or with --features as a
detector's backbone, and with --train the training step (fp32 master weights, gradients and --optimizer's
state); then measured speed (--max-latency-ms, --min-imgs-per-s) on --backend, timing only the survivors,
cheapest (GMACs) first, and reusing rows under <out>/results/ that `zoo.compare --resume` would reuse
(same key). A noisy timing decides nothing: the model is listed as undecided unless --allow-noisy.
Measured rows are appended there unless --no-save. A --rank no candidate has a value for (top-1 at a
detection size) falls back to gmacs, and the output says so.

exit status: 0 a selection was printed (the shortlist may be empty); 2 bad input (one line on stderr,
nothing written); 130 interrupted, 143 terminated (SIGTERM) (timed rows finished before it are kept).
"""
from __future__ import annotations

import argparse
import logging
import sys

from .errors import UsageError, UsageParser, ZooError
from .models.cards import PRETRAINING
from .runs.plan import check_out_dir, choice
from .runs.safe_io import strict_dumps
from .selection_table import render  # noqa: F401 - render: part of the API
from .runs.user_cache import disabled
from .signals import exit_status, handles_sigterm, interrupted
from .shortlist import (BACKENDS, COMPILE_MODES, FORMATS, OPTIMIZERS, RANKS, Query, num,  # noqa: F401
                        select)  # noqa: F401 - select: the API, as `from zoo.select import select`


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.select", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resolution", default="224", help="input side, or HEIGHTxWIDTH (default 224)")
    p.add_argument("--pad-to", help="pad each side up to a multiple of this first (as detection pipelines pad to 32)")
    p.add_argument("--models", default="all", help="comma list: names, wildcards (swin_*), timm:<name> "
                                                   "(default: the whole registry)")
    p.add_argument("--features", action="store_true",
                   help="count and time the backbone as a feature extractor (no pooling, no head)")
    p.add_argument("--max-gmacs", help="GMACs per image")
    p.add_argument("--max-params", help="parameters, millions")
    p.add_argument("--max-act-mib", help="activation peak of one forward at the batch, MiB")
    p.add_argument("--max-serve-mib", help="weights at --dtype + activation peak at the batch, MiB")
    p.add_argument("--train", action="store_true", help="count (and time) a training step at the batch")
    p.add_argument("--max-train-mib", help="training memory at the batch, MiB: fp32 weights, gradients, optimizer "
                                           "state, training activations (implies --train)")
    p.add_argument("--optimizer", default="sgd", help=f"whose state training memory counts: {', '.join(OPTIMIZERS)} "
                                                      f"(default sgd)")
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
    p.add_argument("--backend", default="eager", help=f"timing runtime: {', '.join(BACKENDS)} (default eager)")
    p.add_argument("--device", default="auto", help="for timing: auto, cpu, cuda (default auto)")
    p.add_argument("--dtype", default="fp32", help="fp32, bf16, fp16 (counting and timing; default fp32)")
    p.add_argument("--batch-size", default="1", help="a batch, or auto with --max-serve-mib: the largest that "
                                                     "fits (default 1)")
    p.add_argument("--threads", help="CPU threads for timing (default: all available cores)")
    p.add_argument("--channels-last", action="store_true", help="timing: channels-last memory format")
    p.add_argument("--compile", nargs="?", const="default", default=None,
                   help=f"timing: torch.compile, with a mode ({', '.join(COMPILE_MODES)}; default 'default')")
    p.add_argument("--quick", action="store_true", help="short timing runs")
    p.add_argument("--iters", help="timing: at least this many timed steps (default 10, --quick 3); a p99 needs 100")
    p.add_argument("--min-seconds", help="timing: at least this many seconds of timed steps (default 1, --quick 0.3)")
    p.add_argument("--allow-noisy", action="store_true",
                   help="decide on noisy timings too (default: such a model is listed as undecided)")
    p.add_argument("--wait-quiet", metavar="SECONDS", help="before each timing, wait up to this long for a quiet "
                                                           "machine")
    p.add_argument("--rank", default="top1", help=f"{', '.join(RANKS)} (default top1)")
    p.add_argument("--format", default="table", help=f"{', '.join(FORMATS)} (default table)")
    p.add_argument("--out", default=".", help="folder whose results/ timed rows are reused from and appended to")
    p.add_argument("--no-save", action="store_true", help="write nothing (stored rows are still reused)")
    p.add_argument("--answers", action="store_true",
                   help="answer the report's worked questions into <out>/results/answers.json and exit")
    p.add_argument("--no-cache", action="store_true", help="count again: neither read nor write the user cache")
    return p


def query_of(args: argparse.Namespace) -> Query:
    """The Query the command line asks (every field of Query is an option of the same name)."""
    fields = {k: v for k, v in vars(args).items() if k in Query.__dataclass_fields__}
    return Query(**fields, save=not args.no_save)


@handles_sigterm("zoo.select")
def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if any(a == "--predict" or a.startswith("--predict=") for a in (sys.argv[1:] if argv is None else argv)):
        from .select_predicted import main as predicted      # a GPU not at hand: zoo.select_predicted

        return predicted(argv)
    try:
        args = build_parser().parse_args(argv)
        choice(args.format, FORMATS, "format")
        if args.answers:
            from .answers import write_answers

            print(write_answers(check_out_dir(args.out)))
            return 0
        with disabled(args.no_cache):
            result = select(query_of(args))
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
