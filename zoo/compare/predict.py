"""zoo.compare --predict: the predicted rows of one or several datasheet devices (zoo.runs.decision), each appended
as it is made to <out>/results/predicted.jsonl (zoo.runs.store, marked predicted and saved_by) unless --no-save,
then printed: each device's table, per model and size the winner with whether the band separates it, and for two
devices at the same batches their break-even price ratio."""
from __future__ import annotations

import contextlib
import json
import sys

from .._version import __version__
from ..errors import UsageError

SAVED_BY = "zoo.compare --predict"


def saved(row: dict, by: str = SAVED_BY) -> dict:
    """The row as results/predicted.jsonl keeps it: every predicted field, who saved it, archzoo's version."""
    return {**row, "saved_by": by, "archzoo_version": __version__}


def run_predictions(plan, args) -> tuple[list[dict], list[dict]]:
    """(rows, decisions) for the parsed command line (zoo.compare.cli.parse); rows are stored as they come."""
    from ..runs.decision import Counts, decisions, device_rows
    from ..runs.store import ResultStore

    store = None if args.no_save else ResultStore(args.out)
    target = args.latency_target_ms if args.sweep else None
    with store.locked() if store else contextlib.nullcontext():
        rows = device_rows(plan.tasks, args.predict, Counts(args.reparam, args.tf32, args.channels_last), args.price_per_hour, target,
                           on_row=(lambda row: store.append_predicted(saved(row))) if store else None)
    return rows, decisions(rows, args.price_per_hour, same_batch=target is None)


def print_predictions(plan, args) -> int:
    from ..runs.predicted import break_even, break_even_markdown, predicted_markdown

    if args.format == "csv" and len(args.predict) > 1:
        raise UsageError("--format csv: one device's rows; several devices give a decision too (markdown or json)")
    rows, decided = run_predictions(plan, args)
    per_device = [[r for r in rows if r["device"] == d] for d in args.predict]
    even = break_even(*per_device) if len(per_device) == 2 and not args.sweep else None
    if args.format == "json":
        out = rows if len(per_device) == 1 else {"predicted": True, "rows": rows, "decisions": decided,
                                                 **({"break_even": even} if even is not None else {})}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    elif args.format == "csv":
        import csv

        columns = [k for k in rows[0] if not isinstance(rows[0][k], dict)] if rows else []
        writer = csv.DictWriter(sys.stdout, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        sys.stdout.write("\n".join(predicted_markdown(part) for part in per_device))
        if decided:
            sys.stdout.write(decision_markdown(decided, args.latency_target_ms if args.sweep else None))
        if even:
            sys.stdout.write(break_even_markdown(even))
        for row in plan.skipped:
            sys.stdout.write(f"skipped: {row['model']} {row['img_h']}x{row['img_w']}: {row['skipped']}\n")
    if not args.no_save:
        print(f"zoo.compare: {len(rows)} predicted row(s) appended to {args.out / 'results' / 'predicted.jsonl'}",
              file=sys.stderr)
    return 0


def decision_markdown(decided: list[dict], target_ms: float | None) -> str:
    """The winner per model and size, headed so it cannot be taken for a measurement."""
    from ..console.markdown import markdown_table, plain

    usd = decided[0]["ranked_by"] == "imgs_per_usd"
    what = "img per USD (expected)" if usd else "img/s (expected)"
    where = (f"each device at its best batch within {target_ms:g} ms (expected, mean) per batch" if target_ms
             else "each device at the same batch")
    cells = []
    for d in decided:
        size = d["img_size"] or f"{d['img_h']}x{d['img_w']}"
        if d["winner"] is None:
            cells.append([d["model"], size, "none eligible", None, None, None, None, None, None, None])
            continue
        runner = d["runner_up"]
        cells.append([d["model"], size, d["winner"], d["winner_batch_size"], plain(d["winner_value"]),
                      runner, d.get("runner_up_batch_size"), plain(d["runner_up_value"]) if runner else None,
                      f"{d['winner_over_runner_up']:.2f}" if runner else None,
                      None if runner is None else "yes" if d["band_separates"] else "no: not decided"])
    lines = ["", f"PREDICTED decision, not measured: per model and size the device with the most "
                 f"{'images per dollar' if usd else 'images per second'}, {where}. 'band separates': the winner's "
                 f"p10 is above the runner-up's p90 (otherwise the prediction does not decide between them).", "",
             markdown_table(["model", "size (px)", "winner", "batch", what, "runner-up", "batch", what,
                             "winner / runner-up", "band separates"], cells).rstrip("\n")]
    lines += [f"not eligible: {d['model']} on {device}: {why}" for d in decided
              for device, why in d["not_eligible"].items()]
    return "\n".join(lines) + "\n"
