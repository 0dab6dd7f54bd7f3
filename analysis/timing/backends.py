"""Timing backends: what runs one step of a model. A backend prepares a step for a model and an input, and
says which settings it supports (and why not); the harness (analysis.timing.harness) does the rest.

`eager` is PyTorch itself, with channels-last and torch.compile as its options; `onnxruntime` is in
analysis.timing.onnx_runtime.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import torch
import torch.nn as nn

from ..vocab import DTYPES
from .steps import make_inference_step, make_train_step

MODES = ("inference", "train")


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA and, in recent torch, CPU) or the CPU allocator's RuntimeError; backends
    raise out-of-memory so, and the harness halves the batch on it."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


@dataclass(frozen=True)
class TimingSetting:
    """How a step runs, whatever the backend (the row's settings say the same)."""
    device: str = "cpu"               # "cpu" or "cuda" (resolved: never "auto")
    dtype: str = "fp32"               # timing applies bf16/fp16 through autocast (weights stay fp32)
    mode: str = "inference"           # or "train": forward + backward + SGD step
    threads: Optional[int] = None     # torch's CPU threads (None: every available core)
    channels_last: bool = False       # input and weights in channels-last memory format
    compile: Optional[str] = None     # a torch.compile mode ("default", "max-autotune", ...), or None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")


@dataclass
class PreparedStep:
    step: Callable[[], object]        # one timed step
    device: torch.device              # where it runs
    details: dict = field(default_factory=dict)   # the backend's own fields of the row (ONNX opset, ...)
    host_clock: bool = False          # the step returns only when done: time it with the host clock
    observable: bool = False          # a step is one eager forward through PyTorch's dispatcher and nothing
    #                                   else (not compiled, no backward): an observer around it sees the forward

    @property
    def clock(self) -> torch.device:
        """The device whose clock times the step: CUDA events for torch's own CUDA work, else the host's."""
        return torch.device("cpu") if self.host_clock else self.device


class TimingBackend(Protocol):
    name: str
    sees_dispatcher: bool             # whether PyTorch's dispatcher runs the step (so attn_path can be read)

    def unsupported(self, setting: TimingSetting) -> Optional[str]:
        """Why this backend cannot time `setting`, or None."""

    def prepare(self, model: nn.Module, images: torch.Tensor, setting: TimingSetting) -> PreparedStep:
        """A step of `model` on `images`; out-of-memory raises as torch does (the harness halves the batch)."""


class EagerBackend:
    """PyTorch as written: eval + inference_mode, or a training step; optionally channels-last or compiled."""
    name = "eager"
    sees_dispatcher = True

    def unsupported(self, setting: TimingSetting) -> Optional[str]:
        return None

    def prepare(self, model: nn.Module, images: torch.Tensor, setting: TimingSetting) -> PreparedStep:
        device = images.device
        model = model.to(device)
        if setting.channels_last:
            model = model.to(memory_format=torch.channels_last)
        timed = torch.compile(model, mode=setting.compile) if setting.compile else model
        inference = setting.mode == "inference"
        make = make_inference_step if inference else make_train_step
        return PreparedStep(make(timed, images, device, setting.dtype), device,
                            observable=inference and not setting.compile)
