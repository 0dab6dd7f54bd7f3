"""Counted cost, cached in the user cache: a count made before with the same full key is read back, not redone.

The key is everything a count depends on: model, size, batch, dtype, train, features, the torch, timm
and archzoo versions, a hash of archzoo's own source files (zoo/ and analysis/), so any code change
misses the cache, and the model's spec as data (a model registered by the user's own code included).
What the user cache trusts and ignores: zoo.store.user_cache. A kept value is also checked as the cost row it
becomes (zoo.store.schema, with the identity taken from the key, never from the value) before it is used.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Callable

from .request import Request
from ..store.schema import MAX_COUNT, SCHEMA_VERSION, CostRow, SchemaError, fields_of
from ..store.user_cache import UserCache, enabled

NAMESPACE = "count"
OPS_NAMESPACE = "count_ops"     # the op list of the same count (zoo.runs.counted.Count.ops), under the same key
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


def count_key(request: Request) -> dict:
    """The cache key of `request`'s count (its optimizer is not part of it: the count is SGD's, zoo.runs.counted)."""
    from analysis.timing.fingerprint import timm_version, torch_version

    from .._version import __version__
    from ..models.registry import get_spec

    r = request
    spec = get_spec(r.model)
    height, width = r.img_size.hw
    return {"model": r.model, "img_h": height, "img_w": width, "batch_size": r.batch_size, "dtype": r.dtype,
            "train": bool(r.train), "features": bool(r.features), "frozen_stages": r.frozen_stages,
            "detector": r.detector, "segmenter": r.segmenter,
            "torch": torch_version(), "timm": timm_version(),
            "archzoo": __version__, "source": source_hash(),
            "spec": f"{spec!r} {spec.vit_config!r}"}     # a model registered outside archzoo's source, by its data


IDENTITY = ("schema", "kind", "model", "img_h", "img_w", "img_size", "batch_size", "settings", "software",
            "family", "skipped", "failed", "failed_attempts", "traceback")
COUNT_FIELDS = frozenset(fields_of("cost")) - frozenset(IDENTITY)     # what a count may hold: env, tokens, record


def valid_count(key: dict, value) -> bool:
    """Whether `value` is a count a cost row of `key` can hold: no identity field, and the row it makes valid."""
    if not isinstance(value, dict) or not set(value) <= COUNT_FIELDS:
        return False
    square = key["img_h"] == key["img_w"]
    try:
        CostRow(schema=SCHEMA_VERSION, kind="cost", model=key["model"], img_h=key["img_h"], img_w=key["img_w"],
                img_size=key["img_h"] if square else None, batch_size=key["batch_size"],
                settings={"dtype": key["dtype"], "train": key["train"], "features": key["features"]}, software={},
                **value)
    except SchemaError:
        return False
    return value.get("macs") is not None


def cached_count(compute: Callable[[Request], dict], request: Request) -> dict:
    """compute(request) (zoo.runs.counted.count), from the user cache when it holds this key, else computed and
    stored."""
    if not enabled():
        return compute(request)
    key = count_key(request)
    cache = UserCache(NAMESPACE)
    kept = cache.get(key, lambda value: valid_count(key, value))
    if kept is not None:
        return kept
    start = time.perf_counter()
    fresh = json.loads(json.dumps(compute(request)))      # the value exactly as a later hit reads it
    if not valid_count(key, fresh):      # past int64 (run_task refuses the row): nothing worth keeping
        return fresh
    cache.put(key, fresh, {"counted_seconds": round(time.perf_counter() - start, 3), "pid": os.getpid(),
                           "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return fresh


def is_cached(request: Request) -> bool:
    if not enabled():
        return False
    key = count_key(request)
    return UserCache(NAMESPACE).entry(key, lambda value: valid_count(key, value)) is not None


def _valid_ops(value) -> bool:
    """[[op_class, FLOPs, bytes, count], ...] as TrafficCounter.op_list gives them (JSON lists)."""
    return isinstance(value, list) and all(
        isinstance(op, list) and len(op) == 4 and isinstance(op[0], str)
        and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_COUNT for n in op[1:])
        for op in value)


def keep_ops(request: Request, ops: list) -> None:
    """Keep the op list of `request`'s count beside its record (nothing when the user cache is off)."""
    if enabled():
        UserCache(OPS_NAMESPACE).put(count_key(request), [list(op) for op in ops])


def kept_ops(request: Request) -> list | None:
    """The kept op list of `request`'s count, as tuples, or None."""
    if not enabled():
        return None
    kept = UserCache(OPS_NAMESPACE).get(count_key(request), _valid_ops)
    return None if kept is None else [tuple(op) for op in kept]
