"""A cost row's measured fields: a registry model built on meta and counted (analysis.count), with the serving
memory the run layer derives from the record."""
from __future__ import annotations

from analysis.size import Size
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


OPTIMIZER_STATES = {"sgd": ("SGD with momentum", 1), "adamw": ("AdamW", 2)}   # fp32 state tensors per parameter


def serving_memory(record: dict, dtype: str, optimizer: str = "sgd") -> dict:
    """Memory to serve a batch: weights at the dtype + the activation peak. A training step is counted as
    torch.autocast (+ GradScaler for fp16) trains: fp32 master weights, one fp32 gradient and the optimizer's
    fp32 state per trainable parameter, for bf16/fp16 also the low-precision weight copies autocast caches
    for the step, plus the training step's activation peak."""
    itemsize = DTYPES[dtype].itemsize
    fields = {"serve_bytes": record["weight_bytes"] + record["act_peak_bytes"], "train_serve_bytes": None,
              "train_optimizer": None}
    if record.get("train_act_peak_bytes") is not None:
        params, trainable = record["params"], record.get("trainable_params", record["params"])
        name, states = OPTIMIZER_STATES[optimizer]
        master = record["weight_bytes"] + params * (4 - itemsize)      # parameters in fp32, buffers as counted
        cast_copies = params * itemsize if itemsize < 4 else 0
        text = f"{name}: {states} fp32 state tensor{'s' if states > 1 else ''} per parameter"
        if cast_copies:
            text += f"; mixed precision: fp32 master weights and gradients + autocast's {dtype} weight copies"
        fields.update(train_serve_bytes=master + 4 * trainable * (1 + states) + cast_copies
                      + record["train_act_peak_bytes"], train_optimizer=text)
    return fields
