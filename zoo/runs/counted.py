"""A cost row's measured fields: a registry model built on meta and counted (analysis.count), with the serving
memory the run layer derives from the record. `count_of(request)` is the one count of a request (its cost record
and the op list of the same forward), kept in the user cache under the request's key: the cost row, the timed
row's host-memory fit and its roofline read it instead of building the module again; `counted` is its record.

NB: $ARCHZOO_BUILD_LOG (debugging, tests): a file each module build appends one line to (pid, device, request),
so the builds of a run can be counted across its processes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from analysis.size import SizeLike
from analysis.vocab import DTYPE_BYTES, torch_dtype

from ..models.registry import create_model, get_spec, map_shapes
from .request import Request, request_of
# NB: torch loads with the first count, not with this module: a count the user cache holds needs none


BUILD_LOG_ENV = "ARCHZOO_BUILD_LOG"


def _log_build(request: Request, device: str) -> None:
    path = os.environ.get(BUILD_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as log:       # one short append: whole lines across processes
            log.write(f"{os.getpid()} {device} {request.model} {request.img_size.label} b{request.batch_size}\n")


def build(request: Request, device: str, dtype: str | None = None, **overrides):
    """The module `request` measures: the model, its feature extractor, or a whole detector or segmenter on it,
    held in `dtype` (None: the request's). overrides: create_model's (attn_impl, in_chans, ...)."""
    from ..models.stages import freeze_stages

    _log_build(request, device)
    r, held = request, torch_dtype(dtype or request.dtype)
    if r.segmenter is not None:
        from ..models.segmenters import create_segmenter

        return create_segmenter(r.model, r.segmenter, r.img_size, device=device, dtype=held,
                                frozen_stages=r.frozen_stages, **overrides)
    if r.detector is not None:
        from ..models.detectors import create_detector

        return create_detector(r.model, r.detector, r.img_size, device=device, dtype=held,
                               frozen_stages=r.frozen_stages, **overrides)
    module = create_model(r.model, img_size=r.img_size, device=device, dtype=held, features=r.features,
                          **overrides)
    if r.frozen_stages is not None:
        freeze_stages(module, r.frozen_stages)
    return module


def asked(what: Request | str, img_size: SizeLike | None, axes: dict) -> Request:
    """The Request `count` and `counted` are asked for: `what` itself, or a model name's (train True unless said)."""
    return request_of(what, img_size, **axes) if isinstance(what, Request) else \
        request_of(what, img_size, **{"train": True, **axes})


@dataclass(frozen=True)
class Count:
    """One request counted on meta: `record` the cost fields (count's), `ops` the op list of the same inference
    forward of the request's batch ((op_class, FLOPs, bytes, count): the CPU roofline's input)."""
    record: dict
    ops: list

    @property
    def act_peak_bytes(self) -> int:
        return self.record["act_peak_bytes"]

    @property
    def train_act_peak_bytes(self) -> int | None:
        return self.record.get("train_act_peak_bytes")

    def to_json(self) -> dict:
        return {"record": self.record, "ops": [list(op) for op in self.ops]}


def count(what: Request | str, img_size: SizeLike | None = None, **axes) -> dict:
    """Cost fields of a registry model (built on meta): what a cost row holds besides its identity. Takes a
    Request, or a model name, a size and Request's fields (`count("vit_b16", 224)`; train defaults to True
    there, as it always has). A training step's memory is SGD's (`counted` applies the request's optimizer)."""
    from .count_cache import keep_ops

    r = asked(what, img_size, axes)
    made = measure(r)
    keep_ops(r, made.ops)         # beside the record the user cache keeps of this count (count_of)
    return made.record


def measure(r: Request) -> Count:
    """The Count of `r`, made now: one build on meta, one counted forward (and training step when it trains)."""
    from analysis.count.cost import cost_and_ops, macs_by_module

    from ..models.stages import feature_layout

    dtype = torch_dtype(r.dtype)
    module = build(r, "meta")
    cost, ops = cost_and_ops(module, r.img_size, batch_size=r.batch_size, dtype=dtype, train=r.train)
    record = cost.as_dict()
    record.update(serving_memory(record, r.dtype))
    if r.segmenter is not None:
        from ..models.segmenters import segmenter_fields

        record.update(segmenter_fields(module, r.model, lambda m: macs_by_module(m, r.img_size, dtype)))
    elif r.detector is not None:
        from ..models.detectors import detector_fields

        record.update(detector_fields(macs_by_module(module, r.img_size, dtype), module))
    elif r.features:
        record["features"] = map_shapes(module, r.img_size, 3)   # the module just counted
        record["feature_strides"], record["feature_stages"] = feature_layout(module)
    return Count({"tokens": get_spec(r.model).tokens(r.img_size), **record, "env": {"device": "meta"}}, ops)


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


def counted(what: Request | str, img_size: SizeLike | None = None, **axes) -> dict:
    """`count`, read from the user cache when the same count was made before (zoo.runs.count_cache), with the
    training memory of the request's optimizer (when it has one and trains). Takes what `count` takes."""
    r = asked(what, img_size, axes)
    record = count_of(r).record
    if r.optimizer is not None and r.train:
        record = {**record, **serving_memory(record, r.dtype, r.optimizer)}
    return record


def count_of(request: Request) -> Count:
    """The request's Count: from the user cache when it was counted before (zoo.runs.count_cache: the record and,
    beside it, the op list), else measured (one build) and kept there."""
    from .count_cache import cached_count, keep_ops, kept_ops
    from .user_cache import enabled

    if not enabled():
        return measure(request)
    made = {}

    def compute(r: Request) -> dict:
        made["now"] = measure(r)
        keep_ops(r, made["now"].ops)
        return made["now"].record

    record = cached_count(compute, request)
    ops = made["now"].ops if "now" in made else kept_ops(request)
    if ops is None:           # a record kept without its op list (its entry lost): counted again
        made = measure(request)
        keep_ops(request, made.ops)
        return Count(record, made.ops)
    return Count(record, ops)
