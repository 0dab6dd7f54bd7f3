"""Hypothesis strategies for results rows generated from the schema itself: every field of the row's kind
present or absent (required ones always), numbers at their bounds or inside them, odd strings, dicts and
lists; and the "anchor" rows whose keys match what zoo.select and zoo.compare --resume would reuse."""
from __future__ import annotations

import math

from hypothesis import strategies as st

from zoo.store import schema
from zoo.runs.tasks import Task, base_row, machine

MODELS = ["deit_ti", "vit_ti16", "convnext_t", "swin_t", "no_such_model", "timm:resnet18"]
SIZES = [(224, 224), (384, 384), (1, 1), (65_536, 65_536), (800, 1344), (32, 65_536)]
TEXT = st.text(max_size=12)


def _number(name: str, as_float: bool):
    low, high = schema.BOUNDS.get(name, schema.DEFAULT_BOUNDS)
    if as_float:
        top = float(high) if float(high) <= high else math.nextafter(float(high), 0)   # 2^63 - 1 rounds up
        return st.sampled_from([float(low), top]) | st.floats(float(low), top)
    return st.sampled_from([low, high]) | st.integers(low, min(high, 10**6))


def _value(name: str, accepted: tuple):
    choices = []
    for t in accepted:
        if t is bool:
            choices.append(st.booleans())
        elif t is int:
            choices.append(_number(name, False))
        elif t is float:
            choices.append(_number(name, True) | _number(name, False))
        elif t is str:
            choices.append(TEXT)
        elif t is list:
            item = schema.ITEMS.get(name)
            choices.append(st.lists(TEXT, max_size=2) if item is str else
                           st.lists(st.lists(_number(name, False), min_size=3, max_size=3), max_size=3)
                           if item is list else st.lists(_value(name, (int, float) if item != int else (int,)),
                                                         max_size=3))
        elif t is dict:
            values = _number(name, False) if name.endswith("_by_component") else _number(name, False) | TEXT
            choices.append(st.dictionaries(TEXT, values | st.none() if name == "env" else values, max_size=3))
        elif t is object:
            choices.append(st.none() | st.booleans() | TEXT | _number(name, False))
    return st.one_of(choices)


def _settings(kind: str):
    fields = {"dtype": st.sampled_from(["fp32", "bf16", "fp16", "int3"]), "train": st.booleans(),
              "features": st.booleans()}
    if kind == "throughput":
        fields.update(device=st.sampled_from(["cpu", "cuda", "tpu"]), threads=st.none() | st.integers(1, 64),
                      quick=st.booleans(), channels_last=st.booleans(),
                      compile=st.none() | st.sampled_from(["default", "max-autotune"]),
                      backend=st.sampled_from(["eager", "onnxruntime", "other"]))
    return st.fixed_dictionaries(fields)


IDENTITY = {"schema", "kind", "model", "img_h", "img_w", "img_size", "batch_size", "settings"}


@st.composite
def rows(draw, kind: str | None = None, anchor: dict | None = None) -> dict:
    """A row the schema accepts: `anchor` fixes its identity (a key a reader will look up)."""
    kind = kind or draw(st.sampled_from(schema.KINDS))
    fields = schema.fields_of(kind)
    hints = schema.accepted_types(kind)
    status = draw(st.sampled_from(["measured"] * 4 + ["skipped", "failed"]))
    if anchor:
        row = dict(anchor)
        status = "measured"
    else:
        h, w = draw(st.sampled_from(SIZES))
        row = {"schema": schema.SCHEMA_VERSION, "kind": kind, "model": draw(st.sampled_from(MODELS)), "img_h": h,
               "img_w": w, "img_size": h if h == w else None,
               "batch_size": draw(st.sampled_from([1, 2, 1 << 20])), "settings": draw(_settings(kind)),
               "software": draw(st.sampled_from([base_row(Task.named("cost", "deit_ti", 224))["software"], {}]))}
    for name, field in fields.items():
        if name in row or name in ("skipped", "failed"):
            continue
        required = field.metadata["required"] and status == "measured"
        if required or draw(st.booleans()):
            accepted = tuple(t for t in hints[name] if t is not type(None))
            row[name] = draw(_value(name, accepted))
    if status != "measured":
        row[status] = draw(TEXT)
    return schema.validate(row)


def anchor(task: Task) -> dict:
    """The identity of the row that running `task` here would give (its --resume key)."""
    env = machine(task.timing.device) if task.kind == "throughput" else {}
    return {**base_row(task), "env": env}

