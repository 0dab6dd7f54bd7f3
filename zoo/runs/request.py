"""What one measurement builds and counts: the model at a size and batch, in a dtype, as what (classifier, feature
extractor, whole detector or segmenter, stages frozen), inference or a training step (and whose optimizer state
its memory counts). Made once (zoo.runs.plan, zoo.select's Query, the report's deterministic tasks) and handed
down as is: the count cache's key, the count, the timed row's MACs, the roofline and the GPU memory all read it.

A Task (zoo.runs.tasks) holds a Request beside how it is measured (its kind, and a timed task's Timing):
`task.request` is its Request, `Task.of(kind, request, timing)` the Task of one.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from analysis.size import Size


def setting(default, when: str = "always"):
    """A field that is one of a row's settings (zoo.runs.tasks.Task.settings): "always", or "when set" (only
    when not None, so rows written before the field existed keep their keys)."""
    return field(default=default, metadata={"setting": when})


def setting_fields(holder) -> dict:
    """The fields of a Request, Timing or Task marked `setting`, by name, in their order."""
    out = {}
    for f in dataclasses.fields(holder):
        when, value = f.metadata.get("setting"), getattr(holder, f.name)
        if when == "always" or (when == "when set" and value is not None):
            out[f.name] = value
    return out


@dataclass(frozen=True)
class Request:
    model: str
    img_size: Size                        # 224 and (800, 1344) are taken as the Size they mean
    batch_size: int = 1
    dtype: str = setting("fp32")
    train: bool = setting(False)          # also count the training step (its MACs, activation peak, memory)
    features: bool = setting(False)       # the backbone as a feature extractor (no pooling, no head)
    frozen_stages: Optional[int] = setting(None, "when set")   # no gradients for the stem and stages 1..K
                                                              # (features / detector / segmenter)
    detector: Optional[str] = setting(None, "when set")    # the whole detector (zoo.models.detectors) on this backbone
    segmenter: Optional[str] = setting(None, "when set")   # the whole segmenter (zoo.models.segmenters) on it
    optimizer: Optional[str] = setting(None, "when set")   # with train: whose state the training memory counts
                                                          # (None: SGD)

    def __post_init__(self):
        object.__setattr__(self, "img_size", Size.of(self.img_size))

    def replace(self, **changes) -> Request:
        return dataclasses.replace(self, **changes)

    @property
    def per_image(self) -> Request:
        """The request whose count gives MACs per image: batch 1, inference, fp32 (MACs depend on none of them;
        the count cache keeps one entry per model and module)."""
        return self.replace(batch_size=1, dtype="fp32", train=False, optimizer=None)


FIELDS = tuple(f.name for f in dataclasses.fields(Request))


def request_of(what: Request | str, img_size=None, **axes) -> Request:
    """`what` if it is a Request, else the Request of a model name, a size and axes (Request's fields)."""
    if isinstance(what, Request):
        if img_size is not None or axes:
            raise TypeError("a Request takes no size or axes beside it")
        return what
    return Request(what, img_size, **axes)
