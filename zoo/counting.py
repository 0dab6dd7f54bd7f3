"""`zoo.count(module, input_size)`: the cost record of any nn.Module, counted by the counter the commands use.

The module is counted where it is: built on meta (`with torch.device("meta"): module = ...`, or
`zoo.create_model(name, device="meta")`) nothing is allocated or computed; a real module runs one real forward.
It is left as it was: the forward runs in eval mode (restored after), and a dtype other than the module's or a
training step is counted on a copy (NB: a copy of a real module holds its weights once more).
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from analysis.size import Size, SizeLike
from analysis.vocab import torch_dtype

from .errors import ZooError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from analysis.count.record import CostRecord


def count(module: nn.Module, input_size: SizeLike, batch_size: int = 1, dtype: torch.dtype | str | None = None,
          train: bool = False) -> CostRecord:
    """The cost record (analysis.count.record.CostRecord) of one forward of a (batch_size, C, H, W) batch at
    `input_size` (a side, (H, W) or "HxW"; C is the module's `in_chans`, else 3): `.params`, `.macs` (MACs per
    image; FLOPs = 2 x MACs), `.attn_macs`, `.act_peak_bytes` (bytes per batch), `.uncounted_ops` (matmul- or
    conv-like ops that ran without a MAC rule: empty when every one was counted) and the rest of the record;
    with `train`, also one training step's (forward + backward of the outputs' sum). `dtype`: a torch dtype or
    fp32 / bf16 / fp16 (None: the module's own)."""
    from torch import nn

    from analysis.count.cost import cost_record, home_of

    if not isinstance(module, nn.Module):
        raise ZooError(f"zoo.count: a torch.nn.Module to count, not {type(module).__name__}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ZooError(f"zoo.count: batch_size must be a positive integer, not {batch_size!r}")
    try:
        size = Size.parse(input_size) if isinstance(input_size, str) else Size.of(input_size)
    except (TypeError, ValueError) as e:
        raise ZooError(f"zoo.count: input_size: {e}") from None
    wanted = _dtype(dtype) or home_of(module)[1]
    if train or wanted != home_of(module)[1]:
        module = copy.deepcopy(module).to(dtype=wanted)
    was_training = module.training
    module.eval()
    try:
        return cost_record(module, size, batch_size=batch_size, dtype=wanted, train=bool(train))
    finally:
        module.train(was_training)


def _dtype(dtype) -> torch.dtype | None:
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    try:
        return torch_dtype(dtype)
    except (KeyError, ValueError):
        raise ZooError(f"zoo.count: dtype must be a torch dtype or fp32, bf16, fp16, not {dtype!r}") from None
