"""The module a request measures, built once per use: the model, its feature extractor, or a whole detector or
segmenter on it (zoo.runs.counted's count, the timed row, the roofline and the GPU memory count build it here).

NB: $ARCHZOO_BUILD_LOG (debugging, tests): a file each module build appends one line to (pid, device, request),
so the builds of a run can be counted across its processes.
"""
from __future__ import annotations

import os

from analysis.vocab import torch_dtype

from ..models.registry import create_model
from .request import Request

BUILD_LOG_ENV = "ARCHZOO_BUILD_LOG"


def build(request: Request, device: str, dtype: str | None = None, **overrides):
    """The module `request` measures: the model, its feature extractor, or a whole detector or segmenter on it,
    held in `dtype` (None: the request's). overrides: create_model's (attn_impl, in_chans, ...)."""
    from ..models.stages import freeze_stages

    if os.environ.get(BUILD_LOG_ENV):
        with open(os.environ[BUILD_LOG_ENV], "a", encoding="utf-8") as log:     # one short append: whole lines
            log.write(f"{os.getpid()} {device} {request.model} {request.img_size.label} b{request.batch_size}\n")
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
