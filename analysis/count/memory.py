"""Activation memory: peak bytes of live tensors, tracked by allocations and frees at the dispatcher.

Every op output whose storage is new (not a view of an input, not seen before) is an allocation;
it is freed when its storage dies (a weakref finalizer). Parameters, buffers, pre-allocated
gradients and the input batch exist before tracking starts and are never counted. Works on meta
(no memory is touched) as on real devices; on CUDA, torch.cuda.max_memory_allocated is reported
beside it. NB: scratch buffers inside a kernel (workspaces) are invisible at this level; the caching
allocator's rounding is modelled when asked (`block_bytes`, analysis.count.allocator). The largest-batch
search follows the comparison in the ViT paper (Dosovitskiy et al. 2021), appendix D.5, Figure 12 right.
"""
from __future__ import annotations

import functools
import weakref
from collections import defaultdict
from typing import Callable

import torch

from ..batch_search import largest_batch_where
from .dispatch import Observer
from .components import ComponentClassifier, ModuleStack, op_kind


def _storages(tree, found=None) -> list:
    """Storages of the strided tensors in nested tuples/lists/dicts (a cheap tree_leaves)."""
    found = [] if found is None else found
    if isinstance(tree, torch.Tensor):
        if tree.layout == torch.strided and not tree.is_nested:
            found.append(tree.untyped_storage())
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            if isinstance(item, (torch.Tensor, tuple, list, dict)):
                _storages(item, found)
    elif isinstance(tree, dict):
        _storages(list(tree.values()), found)
    return found


def _real_device_outputs(func, args, out):
    """Outputs a real device allocates. NB: eval-mode native_batch_norm on meta returns per-channel
    save_mean/save_invstd where CPU and CUDA return empty tensors; only its output is real."""
    if func is torch.ops.aten.native_batch_norm.default and len(args) > 5 and not args[5]:
        return out[0]
    return out


class ActivationMemoryTracker(Observer):
    """Tracks live bytes of tensors allocated by ops while active; `peak_bytes` is the maximum."""

    def __init__(self, classifier: ComponentClassifier | None = None, stack: ModuleStack | None = None,
                 block_bytes: Callable[[int], int] | None = None):
        """`block_bytes`: the bytes an allocator books per request (analysis.count.allocator; None: as asked)."""
        super().__init__()
        self.classifier, self.stack = classifier, stack
        self.block_bytes = block_bytes
        self.live: dict[int, tuple[int, str]] = {}
        self.live_bytes = self.peak_bytes = 0
        self.live_by_component: dict[str, int] = defaultdict(int)
        self.peak_by_component: dict[str, int] = {}

    def observe(self, func, args, kwargs, out) -> None:
        """Account the outputs of one op that has run (also called by dispatch.ObservingMode)."""
        inputs = None
        for storage in _storages(_real_device_outputs(func, args, out)):
            key = id(storage)
            if key in self.live:                               # a view of a tracked activation
                continue
            if inputs is None:
                inputs = {id(s) for s in _storages((args, kwargs))}
            if key not in inputs:                              # not a view of a parameter/input
                self._allocate(storage, key, self._component(func))

    def _component(self, func) -> str:
        if self.classifier is None or self.stack is None:
            return "other"
        return self.classifier.component(self.stack.current, op_kind(func))

    def _allocate(self, storage, key: int, component: str) -> None:
        nbytes = storage.nbytes() if self.block_bytes is None else self.block_bytes(storage.nbytes())
        self.live[key] = (nbytes, component)
        self.live_bytes += nbytes
        self.live_by_component[component] += nbytes
        finalizer = weakref.finalize(storage, self._free, key)
        finalizer.atexit = False
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
            self.peak_by_component = {c: b for c, b in self.live_by_component.items() if b}

    def _free(self, key: int) -> None:
        nbytes, component = self.live.pop(key, (0, "other"))
        self.live_bytes -= nbytes
        self.live_by_component[component] -= nbytes


class CudaPeak:
    """torch.cuda.max_memory_allocated during the block, less what was allocated before it."""

    def __init__(self, device: torch.device):
        self.device, self.peak_bytes = device, None

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._before = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = torch.cuda.max_memory_allocated(self.device) - self._before


def largest_batch(peak_bytes_at: Callable[[int], int], budget_bytes: int, fixed_bytes: int = 0,
                  limit: int = 1 << 20) -> dict:
    """Largest batch b with fixed_bytes + peak_bytes_at(b) <= budget_bytes.

    peak_bytes_at(b) is measured (cheap on meta). Activation memory is affine in the batch for
    these models, so two probes give the guess analysis.batch_search starts from (confirmed by measuring
    b and b + 1 when it is right). Returns {"batch": b (0 if even 1 does not fit), "bytes": ...}.
    """
    peak_bytes_at = functools.cache(peak_bytes_at)      # each probe is a forward: none twice
    room = budget_bytes - fixed_bytes
    one, two = peak_bytes_at(1), peak_bytes_at(2)
    if one > room:
        return {"batch": 0, "bytes": fixed_bytes + one, "bytes_at_1": fixed_bytes + one}
    per_sample = max(two - one, 1)
    guess = min(limit, max(1, 1 + (room - one) // per_sample))
    batch = largest_batch_where(lambda b: peak_bytes_at(b) <= room, range(1, limit + 1), start=guess - 1) or 1
    return {"batch": batch, "bytes": fixed_bytes + peak_bytes_at(batch), "bytes_per_sample": per_sample}
