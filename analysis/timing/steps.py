"""The two timed steps: inference (eval, inference_mode) and training (forward + backward + SGD step).

Reduced precision is applied through autocast (weights stay fp32), as in timm's benchmark.py.
"""
from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..size import Size
from ..vocab import torch_dtype


def autocast_context(device: torch.device, dtype: str):
    """autocast to bf16/fp16 on `device`; a null context for fp32."""
    if torch_dtype(dtype) == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch_dtype(dtype))


def random_input(batch_size: int, img_size: Size, device: torch.device, channels_last: bool,
                 in_chans: int = 3) -> torch.Tensor:
    """One random image batch, reused by every iteration (as in timm's benchmark protocol)."""
    images = torch.randn(batch_size, in_chans, *img_size.hw, device=device)
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    return images


def training_loss(output, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy for (B, classes) logits; the mean of anything else (e.g. feature maps)."""
    if isinstance(output, (list, tuple)):
        return sum(o.float().mean() for o in output)
    if output.dim() == 2:
        return F.cross_entropy(output.float(), targets % output.shape[-1])
    return output.float().mean()


def make_inference_step(model: nn.Module, images: torch.Tensor, device: torch.device,
                        dtype: str) -> Callable[[], torch.Tensor]:
    model.eval()

    def inference_step() -> torch.Tensor:
        with torch.inference_mode(), autocast_context(device, dtype):
            return model(images)

    return inference_step


def make_train_step(model: nn.Module, images: torch.Tensor, device: torch.device, dtype: str,
                    lr: float = 1e-4) -> Callable[[], torch.Tensor]:
    """forward + backward + SGD step; fp16 on CUDA uses a GradScaler as real fp16 training would.
    NB: the step updates the model's weights in place."""
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    targets = torch.randint(0, 1000, (images.shape[0],), device=device)
    scaler = torch.amp.GradScaler("cuda") if (dtype == "fp16" and device.type == "cuda") else None

    def train_step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with autocast_context(device, dtype):
            loss = training_loss(model(images), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return train_step
