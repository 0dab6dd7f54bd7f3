"""A cost row's measured fields: a registry model built on meta and counted (analysis.count), with the serving
memory the run layer derives from the record; `counted` reads a count made before from the user cache."""
from __future__ import annotations

from analysis.size import Size, SizeLike
from analysis.vocab import DTYPE_BYTES, torch_dtype

from ..models.registry import create_model, get_spec, map_shapes
# NB: torch loads with the first count, not with this module: a count the user cache holds needs none


def build(model: str, img_size: Size, device: str, dtype: str = "fp32", features: bool = False,
          frozen_stages: int | None = None, detector: str | None = None, segmenter: str | None = None, **overrides):
    """The module a task measures: the model, its feature extractor, or a whole detector or segmenter on it."""
    from ..models.stages import freeze_stages

    if segmenter is not None:
        from ..models.segmenters import create_segmenter

        return create_segmenter(model, segmenter, img_size, device=device, dtype=torch_dtype(dtype),
                                frozen_stages=frozen_stages)
    if detector is not None:
        from ..models.detectors import create_detector

        return create_detector(model, detector, img_size, device=device, dtype=torch_dtype(dtype),
                               frozen_stages=frozen_stages, **overrides)
    module = create_model(model, img_size=img_size, device=device, dtype=torch_dtype(dtype), features=features,
                          **overrides)
    if frozen_stages is not None:
        freeze_stages(module, frozen_stages)
    return module


def count(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
          features: bool = False, frozen_stages: int | None = None, detector: str | None = None,
          segmenter: str | None = None, **overrides) -> dict:
    """Cost fields of a registry model (built on meta): what a cost row holds besides its identity."""
    from analysis.count.cost import cost_record, macs_by_module

    from ..models.stages import feature_layout

    img_size = Size.of(img_size)     # callers outside the planner may pass 224 or (H, W)
    module = build(model, img_size, "meta", dtype, features, frozen_stages, detector, segmenter, **overrides)
    record = cost_record(module, img_size, batch_size=batch_size, dtype=torch_dtype(dtype), train=train).as_dict()
    record.update(serving_memory(record, dtype))
    if segmenter is not None:
        from ..models.segmenters import segmenter_fields

        record.update(segmenter_fields(module, model, lambda m: macs_by_module(m, img_size, torch_dtype(dtype))))
    elif detector is not None:
        from ..models.detectors import detector_fields

        record.update(detector_fields(macs_by_module(module, img_size, torch_dtype(dtype)), module))
    elif features:
        record["features"] = map_shapes(module, img_size, overrides.get("in_chans", 3))   # the module just counted
        record["feature_strides"], record["feature_stages"] = feature_layout(module)
    return {"tokens": get_spec(model).tokens(img_size), **record, "env": {"device": "meta"}}


OPTIMIZER_STATES = {"sgd": ("SGD with momentum", 1), "adamw": ("AdamW", 2)}   # fp32 state tensors per parameter


def serving_memory(record: dict, dtype: str, optimizer: str = "sgd") -> dict:
    """Memory to serve a batch: weights at the dtype + the activation peak. A training step is counted as
    torch.autocast (+ GradScaler for fp16) trains: fp32 master weights, one fp32 gradient and the optimizer's
    fp32 state per trainable parameter, for bf16/fp16 also the low-precision copies autocast caches for the
    step (of trainable weights only: torch's cached_cast skips tensors without requires_grad, so a frozen
    weight is cast per use and freed), plus the training step's activation peak."""
    itemsize = DTYPE_BYTES[dtype]
    fields = {"serve_bytes": record["weight_bytes"] + record["act_peak_bytes"], "train_serve_bytes": None,
              "train_optimizer": None}
    if record.get("train_act_peak_bytes") is not None:
        params, trainable = record["params"], record.get("trainable_params", record["params"])
        name, states = OPTIMIZER_STATES[optimizer]
        master = record["weight_bytes"] + params * (4 - itemsize)      # parameters in fp32, buffers as counted
        cast_copies = trainable * itemsize if itemsize < 4 else 0
        text = f"{name}: {states} fp32 state tensor{'s' if states > 1 else ''} per parameter"
        if cast_copies:
            text += f"; mixed precision: fp32 master weights and gradients + autocast's {dtype} weight copies"
        fields.update(train_serve_bytes=master + 4 * trainable * (1 + states) + cast_copies
                      + record["train_act_peak_bytes"], train_optimizer=text)
    return fields


def counted(model: str, img_size: SizeLike, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
            features: bool = False, frozen_stages: int | None = None, detector: str | None = None,
            segmenter: str | None = None) -> dict:
    """`count`, read from the user cache when the same count was made before (zoo.runs.count_cache)."""
    from .count_cache import cached_count

    return cached_count(count, model, Size.of(img_size), batch_size, dtype, train, features, frozen_stages, detector,
                        segmenter)
