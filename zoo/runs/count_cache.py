"""Counted cost, cached: `counted(...)` is `tasks.count(...)` read from the user cache when the same count
was made before, and `count_rows(tasks)` counts many cost tasks on the machine's cores, in order.

A count is deterministic given its full key: model, size, batch, dtype, train, features, the torch, timm
and archzoo versions, and a hash of archzoo's own source files (zoo/ and analysis/), so any code
change misses the cache. What the user cache trusts and ignores: zoo.runs.user_cache.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from pathlib import Path

from ..models.spec import Size, as_hw
from .user_cache import UserCache, enabled

NAMESPACE = "count"
SOURCE_PACKAGES = ("zoo", "analysis")
ROOT = Path(__file__).resolve().parents[2]       # holds zoo/ and analysis/ (a checkout or site-packages)


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
    """sha256 over archzoo's .py files (relative path and bytes), in a fixed order."""
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def count_key(model: str, img_size: Size, batch_size: int, dtype: str, train: bool, features: bool) -> dict:
    import torch

    from analysis.timing.fingerprint import timm_version

    from .._version import __version__

    h, w = as_hw(img_size)
    return {"model": model, "img_h": h, "img_w": w, "batch_size": batch_size, "dtype": dtype, "train": bool(train),
            "features": bool(features), "torch": torch.__version__, "timm": timm_version(),
            "archzoo": __version__, "source": source_hash()}


def counted(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
            features: bool = False) -> dict:
    """`tasks.count` of a registry model, from the user cache when it holds this key (stored when not)."""
    from .tasks import count

    if not enabled():
        return count(model, img_size, batch_size, dtype, train, features)
    key = count_key(model, img_size, batch_size, dtype, train, features)
    cache = UserCache(NAMESPACE)
    kept = cache.get(key)
    if kept is not None:
        return kept
    start = time.perf_counter()
    fresh = json.loads(json.dumps(count(model, img_size, batch_size, dtype, train, features)))  # as a hit reads it
    cache.put(key, fresh, {"counted_seconds": round(time.perf_counter() - start, 3), "pid": os.getpid(),
                           "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return fresh


def is_cached(model: str, img_size: Size, batch_size: int = 1, dtype: str = "fp32", train: bool = True,
              features: bool = False) -> bool:
    return enabled() and UserCache(NAMESPACE).entry(count_key(model, img_size, batch_size, dtype, train,
                                                                features)) is not None


def _count_into_cache(request: tuple) -> bool:
    model, img_size, batch_size, dtype = request
    try:
        counted(model, img_size, batch_size, dtype, train=False)
    except Exception:  # noqa: BLE001 - the caller counts it again and reports the failure itself
        return False
    return True


def prefetch(requests: list[tuple]) -> None:
    """Count (model, size, batch, dtype) inference costs the cache lacks on the machine's cores, into the
    cache, so the caller's own `counted` calls read them. Nothing to do with the cache off."""
    if not enabled():
        return
    from .parallel import map_ordered

    misses = [r for r in requests if not is_cached(*r, train=False)]
    for _ in map_ordered(_count_into_cache, misses, lambda request, error: False):
        pass
