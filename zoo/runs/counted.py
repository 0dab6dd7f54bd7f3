"""A cost row's measured fields: a registry model built on meta and counted (analysis.count), with the serving
memory the run layer derives from the record. `count_of(request)` is the one count of a request (its cost record
and the op list of the same forward), kept in the user cache under the request's key: the cost row, the timed
row's host-memory fit and its roofline read it instead of building the module again; `counted` is its record.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.size import SizeLike
from analysis.vocab import torch_dtype

from ..models.registry import get_spec, map_shapes
from .module_build import BUILD_LOG_ENV, build  # noqa: F401 - imported from here by callers and tests
from .request import Request, request_of
# NB: torch loads with the first count, not with this module: a count the user cache holds needs none


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
    if r.segmenter is not None:
        from ..models.segmenters import segmenter_fields

        record.update(segmenter_fields(module, r.model, lambda m: macs_by_module(m, r.img_size, dtype)))
    elif r.detector is not None:
        from ..models.detectors import detector_fields

        record.update(detector_fields(macs_by_module(module, r.img_size, dtype), module))
    elif r.features:
        record["features"] = map_shapes(module, r.img_size, 3)   # the module just counted
        record["head_classes"] = None                               # no classifier (the scratch ViT's says 0)
        record["feature_strides"], record["feature_stages"] = feature_layout(module)
    if r.train:                                  # last: the GPU count holds the module in fp32 (meta: free)
        record.update(train_gpu_parts=train_gpu_parts(r, module.float()), train_precision=precision(r.dtype))
    record.update(serving_memory(record, r.dtype))
    return Count({"tokens": get_spec(r.model).tokens(r.img_size), **record, "env": {"device": "meta"}}, ops)


def precision(dtype: str) -> str:
    """How a training step at `dtype` runs: torch.autocast over fp32 weights for bf16 / fp16, fp32 for fp32."""
    return "fp32" if dtype == "fp32" else f"autocast {dtype}"


def train_gpu_parts(r: Request, module) -> dict:
    """What a training step of `r` holds on a CUDA GPU, the optimizer's state apart: zoo.runs.gpu_memory's count,
    the one --predict reads (autocast's casts over fp32 weights, the task's loss, the caching allocator), of
    `module` (the request's, fp32 on meta)."""
    from .gpu_memory import gpu_train_bytes

    g = gpu_train_bytes(r.replace(optimizer="sgd"), module=module)
    return {"weight_bytes": g["weight_bytes"], "grad_bytes": g["grad_bytes"], "input_bytes": g["input_bytes"],
            "act_peak_bytes": g["train_act_peak_bytes"]}


def serving_memory(record: dict, dtype: str, optimizer: str = "sgd") -> dict:
    """Memory to serve a batch: weights at the dtype + the activation peak. A training step's memory is the
    one model of analysis.predict.memory, read from the row's `train_gpu_parts` (train_gpu_parts): fp32 weights,
    gradients and the optimizer's fp32 state, the input, and the larger of the backward's activation peak
    (with autocast's casts at bf16 / fp16) and the foreach optimizer step's temporaries (one fp32 tensor per
    parameter), each booked as the caching allocator books it."""
    from analysis.predict.memory import OPTIMIZER_STATES, step_peak

    fields = {"serve_bytes": record["weight_bytes"] + record["act_peak_bytes"], "train_serve_bytes": None,
              "train_optimizer": None}
    parts = record.get("train_gpu_parts")
    if parts is not None:
        name, states = OPTIMIZER_STATES[optimizer]
        held = parts["weight_bytes"] + parts["input_bytes"] + (1 + states) * parts["grad_bytes"]
        total, _ = step_peak(held, parts["act_peak_bytes"], parts["grad_bytes"])
        text = f"{name}: {states} fp32 state tensor{'s' if states > 1 else ''} per parameter; {precision(dtype)}"
        if dtype != "fp32":
            text += ": fp32 master weights and gradients, autocast's casts among the activations"
        fields.update(train_serve_bytes=total, train_optimizer=text)
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
    from ..store.user_cache import enabled

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
        ops = measure(request).ops
        keep_ops(request, ops)
    return Count(record, ops)
