"""`python -m zoo.select`: the backbones that fit a budget at one resolution, ranked, with the Pareto front per
pretraining group, and every other model excluded with the first constraint it broke and by how much.

Constraints are applied in this order: the model's size rule (naming the nearest sizes it takes); published
accuracy (--pretraining, which also chooses the checkpoint shown; --weights-available; --min-top1, of the
checkpoint --weights picks); counted cost on the meta device (--max-params, --max-gmacs, --max-act-mib,
--max-serve-mib, --max-train-mib), as a classifier, with --features as a detector's backbone, with --detector
as that whole detector (a plain ViT is excluded: no pyramid; --rank box_ap / mask_ap: the published COCO AP of
the recipe counted, none where the published heads or pretraining differ) or with --segmenter as a whole
segmenter (--rank miou: its published ADE20K mIoU), and with --train the training step (fp32 master weights,
gradients and --optimizer's state); then measured speed (--max-latency-ms, --min-imgs-per-s) on --backend,
timing only the survivors (below), and reusing rows under <out>/results/ that `zoo.compare --resume` would
reuse (same key; a stored noisy row is timed again unless --allow-noisy). Measured rows and the answer
(select-answer.json) are written there unless --no-save. A --rank no candidate has a value for (top-1 at a
detection size) falls back to gmacs, and the output says so.

Measured constraints are settled in bounded time (docs/select.md): models with no accuracy for the rank are
not timed, a model whose lower-bound latency on this machine breaks the budget is excluded untimed, the rest
are timed best-ranked first until none left can beat the best that fits (--time-all: every one), within
--budget-s. Each decision states its step count and band; a band that straddles the budget is "undecided:
within noise". A measured answer holds for this machine: --save-plan / --from-plan time on another.

exit status: 0 a selection was printed (the shortlist may be empty); 2 bad input (one line on stderr,
nothing written); 3 partial: --budget-s ran out; 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). A
partial answer (3, 130, 143 once the question is checked: while screening, counting or timing) is printed
and, for a measured question, stored like a whole one, marked partial, with the models left untimed; timed
rows finished before it are kept.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from ..errors import UsageError, UsageParser, ZooError
from ..options import add_options, datasheet_devices
from ..options.predicted import RANKS as PREDICTED_RANKS, TRAIN_RANKS, check_mode
from ..options.select import OPTIONS, check_from_plan, check_save_plan
from ..store.data_dir import out_or_default
from ..options.values import check_out_dir, choice
from ..store.safe_io import strict_dumps
from ..answers.text import render  # noqa: F401 - render: part of the API
from ..store.user_cache import disabled
from ..console.signals import deferred, exit_status, handles_sigterm, interrupted
from .timing import PARTIAL_STATUS, BudgetSpent
from .shortlist import DEFAULT_BUDGET_S, FORMATS, RANKS, Query, select  # noqa: F401 - select: the API


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m zoo.select", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resolution", default="224", help="input side, or HEIGHTxWIDTH (default 224)")
    add_options(p, "--pad-to", "--models", "--features", "--frozen-stages", "--detector", "--segmenter",
                models=dict(default="all", help="comma list: registry names, wildcards (swin_*), timm:<name> "
                                                "(default: the whole registry)"))
    p.add_argument("--max-gmacs", help="GMACs per image")
    p.add_argument("--max-params", help="parameters, millions")
    p.add_argument("--max-act-mib", help="activation peak of one forward at the batch, MiB")
    p.add_argument("--max-serve-mib", help="weights at --dtype + activation peak at the batch, MiB")
    p.add_argument("--train", action="store_true", help="count (and time) a training step at the batch")
    p.add_argument("--max-train-mib", help="training memory at the batch, MiB: fp32 weights, gradients, optimizer "
                                           "state, training activations (implies --train)")
    add_options(p, "--optimizer", optimizer=dict(default="sgd"))
    p.add_argument("--min-top1", help="ImageNet-1k top-1 (%%) published at this resolution")
    add_options(p, "--pretraining", "--weights")
    p.add_argument("--weights-available", action="store_true",
                   help="only models with timm weights evaluated at this resolution (packaged table)")
    p.add_argument("--max-latency-ms", help="latency of one batch: measured (see --latency-stat), or with --predict "
                                            "the predicted mean")
    p.add_argument("--latency-stat", default="p50", help="p50 (default) or p99")
    p.add_argument("--min-imgs-per-s", help="images per second: measured, or with --predict predicted")
    add_options(p, "--backend", "--device", "--dtype")
    p.add_argument("--batch-size", help="a batch, or auto with --max-serve-mib: the largest that fits (default 1); "
                                        "with --predict also best: per model and device the best batch within "
                                        "--max-latency-ms; with --metrics train, images per GPU (default 64)")
    add_options(p, "--threads", "--channels-last", "--compile", "--quick", "--iters", "--min-seconds")
    p.add_argument("--allow-noisy", action="store_true",
                   help="decide on noisy timings too (default: such a model is listed as undecided)")
    p.add_argument("--wait-quiet", metavar="SECONDS", help="before each timing, wait up to this long for a quiet "
                                                           "machine")
    p.add_argument("--budget-s", default=str(DEFAULT_BUDGET_S), help=f"stop timing after this many seconds and "
                   f"answer with what is settled, marked partial, exit 3 (default {DEFAULT_BUDGET_S:g})")
    p.add_argument("--time-all", action="store_true", help="time every candidate (default: stop once no untimed one "
                                                           "can beat the best that fits)")
    p.add_argument("--save-plan", metavar="FILE", help="screen here and write the candidates and the query to FILE, "
                                                        "for --from-plan on the machine that will serve; times nothing")
    p.add_argument("--from-plan", metavar="FILE", help="run a --save-plan FILE's query on its candidates, timing on "
                                                        "this machine (other query options are not taken)")
    add_options(p, "--predict", predict=dict(help=f"time nothing: answer on datasheet devices ({datasheet_devices()}) "
                                                  f"from the calibrated roofline prediction, screened and ranked on it, "
                                                  f"marked predicted, with its error band (docs/prediction.md); "
                                                  f"several: each one's shortlist, then per model the device that "
                                                  f"wins on --rank and whether the band separates it"))
    p.add_argument("--metrics", help="with --predict: train, a training step and its schedule (default: inference)")
    add_options(p, "--price-per-hour", "--reparam", "--tf32", "--torch", "--attention", "--epochs", "--train-images",
                "--gpus")
    p.add_argument("--max-train-hours", help="with --predict, --metrics train and --epochs: predicted wall hours of "
                                             "the schedule (expectation)")
    p.add_argument("--rank", help=f"{', '.join(RANKS)} (default top1); with --predict {', '.join(PREDICTED_RANKS)} "
                                  f"(default imgs_per_s), with --metrics train {', '.join(TRAIN_RANKS)}")
    p.add_argument("--format", default="table", help=f"{', '.join(FORMATS)} (default table)")
    add_options(p, "--out", "--no-save", no_save=dict(help="write nothing (stored rows are still reused)"))
    p.add_argument("--answers", action="store_true",
                   help="answer the report's worked questions into <out>/results/answers.json (printed, not "
                        "written, with --no-save) and exit")
    add_options(p, "--no-cache")
    return p


def query_of(args: argparse.Namespace) -> Query:
    """The checked Query the command line asks (each option it asks is one of zoo.options.select.OPTIONS, by the
    same name); a UsageError (one line) before any work."""
    fields = {k: v for k, v in vars(args).items() if k in OPTIONS and v is not None}    # None: the API's default
    return Query.of(**fields, save=not args.no_save)


def answer_questions(args: argparse.Namespace) -> int:
    """--answers: the worked questions answered into <out>/results/answers.json (atomically; not with --no-save)
    and printed in --format (json: the file's content; table: its path when written). Options are checked
    as in every other mode, before anything is counted or written."""
    from ..answers.stored import answers_path
    from .answers import fresh_answers, write_answers
    from ..store.safe_io import refuse_unless_regular
    query_of(args)
    out = None if args.no_save else check_out_dir(out_or_default(args.out))
    if out is not None:
        refuse_unless_regular(answers_path(out), option="--out")
    answers = fresh_answers()
    if out is not None:
        try:
            path = write_answers(out, answers)
        except OSError as e:     # a full disk: the temporary file is removed, the old answers.json kept
            print(f"zoo.select: error: cannot write {answers_path(out)}: {e.strerror or e}", file=sys.stderr)
            return 1
    if args.format == "json":
        sys.stdout.write(strict_dumps(answers, indent=2) + "\n")
    elif args.format == "markdown" or out is None:
        fmt = "markdown" if args.format == "markdown" else "table"
        from ..console.markdown import markdown_inline

        sys.stdout.write("\n".join(f"### {markdown_inline(a['question'])}\n\n    {' '.join(a['command'].splitlines())}"
                                   f"\n\n{render(a['answer'], fmt)}" for a in answers))
    else:
        print(path)
    return 0


def _asked_query(args: argparse.Namespace) -> tuple[Query, dict | None]:
    """(the query to run, the plan it came from or None); --from-plan takes the plan's query, and refuses query
    options given beside it (one run could not say which it answered)."""
    if args.from_plan is None:
        return query_of(args), None
    from .plan import RUN_OPTIONS, query_from_plan, read_plan

    given = [k for k in given_options(args) if k in OPTIONS and k not in RUN_OPTIONS]
    check_from_plan(given, args.from_plan)
    plan = read_plan(args.from_plan)
    check_from_plan(given, args.from_plan, plan)
    runs = {"out": args.out, "save": not args.no_save, "budget_s": args.budget_s, "wait_quiet": args.wait_quiet,
            "time_all": args.time_all, "threads": args.threads}
    return query_from_plan(plan, runs, args.from_plan), plan     # checked whole, before any count or timing


def _save_plan(q: Query, path: str) -> str:
    """--save-plan: the screens here (no timing), the plan written; returns what to run on the serving machine."""
    from .shortlist import count_screen, rank_screen, screen_all
    from .plan import check_plan_candidates, check_plan_path, plan_of, write_plan

    check_save_plan(q)
    check_plan_path(path)
    excluded, published = screen_all(q)
    _, counted, stop = count_screen(published, q, excluded)
    if stop is not None:        # a plan is whole or not written
        raise stop
    candidates = rank_screen(counted, q, excluded)
    check_plan_candidates(candidates, excluded, q)      # an empty plan is refused, not written
    write_plan(path, plan_of(q, [r["model"] for r in candidates], excluded))
    return (f"plan: {len(candidates)} candidates to time, {len(excluded)} screened out, in {path}\n"
            f"on the serving machine: python -m zoo.select --from-plan {path} --out DIR\n")


def _answer_path(q: Query):
    from pathlib import Path

    return Path(out_or_default(q.out)) / "results" / "select-answer.json"


def _store_answer(result: dict, q: Query) -> bool:
    """A measured answer, partial or whole, kept beside its rows: <out>/results/select-answer.json; False (and
    one line on stderr) when it cannot be (a full disk): the answer is still printed."""
    if not q.save or not q.measured:
        return True
    from ..store.safe_io import write_atomic

    path = _answer_path(q)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, strict_dumps(result, indent=1))
    except OSError as e:
        print(f"zoo.select: error: cannot keep the answer in {path}: {e.strerror or e}; it is printed below",
              file=sys.stderr)
        return False
    return True


def _half_imported_torch() -> bool:
    """An interrupt landed inside `import torch`: its submodules are loaded, torch itself is not."""
    return "torch" not in sys.modules and any(m.startswith("torch.") for m in sys.modules)


def _exit_now_if_torch_is_broken(code: int, argv) -> int:
    """A process of its own whose torch import was interrupted ends here, with `code`: the interpreter's own
    shutdown would run torch's half-set-up finalizers (an abort, exit 134, or a segfault, 139)."""
    if argv is None and _half_imported_torch():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


@handles_sigterm("zoo.select")
def main(argv: list[str] | None = None) -> int:
    return _exit_now_if_torch_is_broken(_main(argv), argv)


def given_options(args: argparse.Namespace) -> list[str]:
    """The options the command line set to other than their default (flat names, in the parser's order)."""
    parser = build_parser()
    return [a.dest for a in parser._actions if a.dest != "help" and getattr(args, a.dest) != a.default]


def _main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
        choice(args.format, FORMATS, "format")
        check_mode(given_options(args), args.predict, args.metrics)
        if args.predict is not None:       # a GPU not at hand: zoo.select.predicted answers
            from .predicted import answer_command_line

            return answer_command_line(args)
        if args.answers:
            with disabled(args.no_cache):
                return answer_questions(args)
        query, plan = _asked_query(args)
        if query.save and query.measured and args.save_plan is None:    # a folder or a link there: refused first
            from ..store.safe_io import refuse_unless_regular

            refuse_unless_regular(_answer_path(query), option="--out")
        with disabled(args.no_cache):
            if args.save_plan is not None:      # '' too: refused by name, never taken for no plan
                try:
                    sys.stdout.write(_save_plan(query, args.save_plan))
                except OSError as e:    # a full disk: the temporary file is removed, FILE left as it was
                    print(f"zoo.select: error: cannot write {args.save_plan}: {e.strerror or e}", file=sys.stderr)
                    return 1
                return 0
            result = select(query)
    except (UsageError, ZooError) as e:
        print(f"zoo.select: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        # before the question was checked, or in --save-plan or --answers: no answer to print
        what = "budget spent (--budget-s)" if isinstance(e, BudgetSpent) else interrupted(e)
        print(f"zoo.select: {what} before an answer: nothing written; timed rows finished before it are kept",
              file=sys.stderr)
        return PARTIAL_STATUS["budget"] if isinstance(e, BudgetSpent) else exit_status(e)
    if plan is not None:
        result["excluded"] = plan.get("screened_out", []) + result["excluded"]
        result["query"]["plan"] = args.from_plan
    kept = _store_answer(result, query)
    if args.format == "json":
        sys.stdout.write(strict_dumps(result, indent=2) + "\n")
    else:
        sys.stdout.write(render(result, args.format))
    partial = (result.get("timing") or {}).get("partial")
    late = deferred()       # a signal while the settled answer was kept and printed: it was, whole
    if late is not None and not partial:
        print(f"zoo.select: {interrupted(late)} once the answer was settled: it is printed and kept whole",
              file=sys.stderr)
        return exit_status(late)
    return partial["status"] if partial else 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main())
