"""A cost row's measured fields: a registry model built on meta and counted (analysis.count), with the serving
memory the run layer derives from the record; `counted` reads a count made before from the user cache."""
from __future__ import annotations

from analysis.size import Size, SizeLike
from analysis.vocab import DTYPES

from ..models.registry import create_model, get_spec, map_shapes


def count(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
          features: bool = False, **overrides) -> dict:
    """Cost fields of a registry model (built on meta): what a cost row holds besides its identity."""
    from analysis.count.cost import cost_record

    module = create_model(model, img_size=img_size, device="meta", dtype=DTYPES[dtype], features=features, **overrides)
    record = cost_record(module, img_size, batch_size=batch_size, dtype=DTYPES[dtype], train=train).as_dict()
    record.update(serving_memory(record, dtype))
    if features:
        record["features"] = map_shapes(module, img_size, overrides.get("in_chans", 3))   # the module just counted
    return {"tokens": get_spec(model).tokens(img_size), **record, "env": {"device": "meta"}}


def serving_memory(record: dict, dtype: str) -> dict:
    """Memory to serve a batch: weights at the dtype + the activation peak; for a training step also one
    gradient and one SGD momentum buffer per parameter (the step the harness times), at the dtype."""
    param_bytes = record["params"] * DTYPES[dtype].itemsize
    fields = {"serve_bytes": record["weight_bytes"] + record["act_peak_bytes"], "train_serve_bytes": None,
              "train_optimizer": None}
    if record.get("train_act_peak_bytes") is not None:
        fields.update(train_serve_bytes=record["weight_bytes"] + 2 * param_bytes + record["train_act_peak_bytes"],
                      train_optimizer="SGD with momentum: 1 state tensor per parameter (AdamW would add 1 more)")
    return fields


def counted(model: str, img_size: SizeLike, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
            features: bool = False) -> dict:
    """`count`, read from the user cache when the same count was made before (zoo.runs.count_cache)."""
    from .count_cache import cached_count

    return cached_count(count, model, Size.of(img_size), batch_size, dtype, train, features)
