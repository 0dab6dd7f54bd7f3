"""`zoo.compare(models=[...], ...)`: the comparison `python -m zoo.compare` prints, as a pandas DataFrame.

The options are the command's (a keyword per option: `metrics=["cost"]` is `--metrics cost`, `no_save=True` is
`--no-save`), parsed and checked by its own parser, planned, run and merged by its own code (zoo.compare.cli):
one row per record the command prints (`--format json` prints the same records; the table formats them).
Columns are the records' fields, unformatted: `macs` in MACs per image (FLOPs = 2 x MACs), `params` a count,
`act_peak_bytes` in bytes per batch; `frame.attrs["units"]` gives each field's unit from the row schema
(zoo.store.schema). Rows a size rule skipped or that failed are rows too, with `skipped` or `failed` saying why.
"""
from __future__ import annotations

import argparse

# options the frame replaces or that print a table of their own
NOT_IN_THE_API = {"format": "the DataFrame is the format", "predict": "run `python -m zoo.compare --predict`"}


def command_line(parser: argparse.ArgumentParser, options: dict) -> list[str]:
    """The argv for the command's `parser` that `options` (keywords, _ for -) stand for (TypeError for a keyword
    that is none of its options, or a flag given other than True or False): a flag for True, nothing
    for False or None, a comma list for a list or tuple (an (H, W) pair in it as HEIGHTxWIDTH: `resolutions=[224,
    (800, 1344)]`), the text of anything else."""
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    argv: list[str] = []
    for name, value in options.items():
        if name in NOT_IN_THE_API:
            raise TypeError(f"zoo.compare({name}=...): not in the Python API ({NOT_IN_THE_API[name]})")
        action = actions.get(name)
        if action is None or name == "help":
            known = ", ".join(sorted(d for d in actions if d not in NOT_IN_THE_API and d != "help"))
            raise TypeError(f"zoo.compare() got an unexpected keyword argument {name!r}; options: {known}")
        flag = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise TypeError(f"zoo.compare({name}=...): True or False, not {value!r}")
            argv += [flag] if value else []
        elif value is not None:
            text = ",".join(map(_item, value)) if isinstance(value, (list, tuple)) else _item(value)
            argv.append(f"{flag}={text}")          # NB: one token, so a value starting with '-' stays a value
    return argv


def _item(value) -> str:
    """One item of an option's value as the command line writes it: an (H, W) pair or a Size as HEIGHTxWIDTH."""
    if isinstance(value, (list, tuple)):
        return "x".join(map(str, value))
    return value.label if hasattr(value, "label") else str(value)


def compare(models, **options):
    """The records `python -m zoo.compare --models MODELS ...` prints, measured (or skipped, or failed) exactly as
    the command does, as a DataFrame. A keyword that is no option of the command raises TypeError; a bad value,
    zoo.errors.UsageError with the command's own message. Rows go to <out>/results as the command's do unless
    `no_save=True`."""
    from ..store.user_cache import disabled
    from .cli import build_parser, parse, plan_of, run
    from .display import merge

    models = [models] if isinstance(models, str) else models
    args = parse(command_line(build_parser(), {"models": models, **options}))
    plan = plan_of(args)
    with disabled(args.no_cache):
        rows = run(args, plan)
    return records_frame(merge(rows, args.weights, args.pretraining))


def records_frame(records: list[dict]):
    """The records as a DataFrame (integers stay exact: nullable Int64 where a row lacks the field), with each
    field's unit in `attrs["units"]`."""
    import pandas as pd

    from ..store.schema import KINDS, fields_of

    frame = pd.DataFrame.from_records(records).convert_dtypes(convert_string=False, convert_floating=False)
    units = {name: f.metadata["unit"] for kind in reversed(KINDS) for name, f in fields_of(kind).items()
             if f.metadata.get("unit")}
    frame.attrs["units"] = {c: units[c] for c in frame.columns if c in units}
    return frame
