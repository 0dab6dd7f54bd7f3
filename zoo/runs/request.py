"""What one measurement builds and counts: the model at a size and batch, in a dtype, as what (classifier, feature
extractor, whole detector or segmenter, stages frozen), inference or a training step (and whose optimizer state
its memory counts). Made once (zoo.runs.plan, zoo.select's Query, the report's deterministic tasks) and handed
down as is: the count cache's key, the count, the timed row's MACs, the roofline and the GPU memory all read it.

A Task (zoo.runs.tasks) is a Request plus how it is measured (kind, device, backend, timing protocol):
`task.request` is its Request, `Task.of(kind, request, ...)` the Task of one.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from analysis.size import Size


@dataclass(frozen=True)
class Request:
    model: str
    img_size: Size                        # 224 and (800, 1344) are taken as the Size they mean
    batch_size: int = 1
    dtype: str = "fp32"
    train: bool = False                   # also count the training step (its MACs, activation peak, memory)
    features: bool = False                # the backbone as a feature extractor (no pooling, no head)
    frozen_stages: Optional[int] = None   # no gradients for the stem and stages 1..K (features / detector / segmenter)
    detector: Optional[str] = None        # the whole detector (zoo.models.detectors) on this backbone
    segmenter: Optional[str] = None       # the whole segmenter (zoo.models.segmenters) on this backbone
    optimizer: Optional[str] = None       # with train: whose state the training memory counts (None: SGD)

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
