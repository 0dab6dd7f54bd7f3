"""zoo.compare --predict: the predicted rows of one or several datasheet devices (zoo.predict.decision), each appended
as it is made to <out>/results/predicted.jsonl (zoo.store.store, marked predicted and saved_by) unless --no-save,
then printed: each device's table, per model and size the winner with whether the band separates it, and for two
devices at the same batches their break-even price ratio. With --metrics train: the training step of each planned
request on the one device (zoo.predict.train), printed, not saved."""
from __future__ import annotations

import contextlib
import json
import sys

from ..predict.rows import TooLarge, saved
from ..predict.text import decision_markdown


def print_predictions(plan, args) -> int:
    """The rows and decisions of the parsed command line (zoo.compare.cli.parse), each row stored as it comes
    (saved_by "zoo.compare --predict"), then printed."""
    from ..predict.decision import Counts, break_even, decisions, device_rows
    from ..predict.text import break_even_markdown, predicted_markdown
    from ..store.store import ResultStore

    store = None if args.no_save else ResultStore(args.out)
    target, too_large = args.latency_target_ms if args.sweep else None, []
    counts = Counts(args.reparam, args.tf32, args.channels_last, args.torch, args.attention)
    with store.locked() if store else contextlib.nullcontext():
        rows = device_rows(plan.tasks, args.predict, counts, args.price_per_hour, target,
                           on_row=(lambda row: store.append_predicted(saved(row, "zoo.compare --predict")))
                           if store else None, skipped=too_large)
    decided = decisions(rows, args.price_per_hour, same_batch=target is None)
    per_device = [[r for r in rows if r["device"] == sheet.name] for sheet in args.predict]
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
    _say_skipped(too_large, args.format)
    if not args.no_save:
        print(f"zoo.compare: {len(rows)} predicted row(s) appended to {args.out / 'results' / 'predicted.jsonl'}",
              file=sys.stderr)
    return 0


def print_train_predictions(plan, args) -> int:
    """--metrics train: one predicted training row per model, size and batch of the plan, on args.predict's one
    device, as a table (zoo.predict.text) or JSON."""
    from ..predict.text import train_markdown
    from ..predict.train import predict_train

    sheet, price = args.predict[0], (args.price_per_hour or {}).get(args.predict[0].name)
    requests = dict.fromkeys(t.request.replace(train=True) for t in plan.tasks)     # in order, once each
    rows, too_large = [], []
    for r in requests:
        try:
            rows.append(predict_train(r, sheet, args.gpus, args.epochs, args.train_images, price, torch=args.torch,
                                      attention=args.attention))
        except TooLarge as e:
            too_large.append(f"{e} on {sheet.name}")
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif rows:
        sys.stdout.write(train_markdown(rows))
    _say_skipped(too_large, args.format)
    return 0


def _say_skipped(reasons: list[str], fmt: str) -> None:
    """The requests too large to count (zoo.predict.rows.TooLarge), one line each: under the table, or on stderr
    where stdout is JSON or CSV (kept parseable)."""
    for reason in reasons:
        print(f"skipped: {reason}", file=sys.stderr if fmt in ("json", "csv") else sys.stdout)
