"""timm's checkpoint order per architecture (the first tag is what timm.create_model(arch, pretrained=True)
loads), found without importing timm (over a second) wherever possible: the table shipped for the timm version
it was written from (data/timm_tag_order.json), else the user cache under the installed timm's version, else
timm itself. benchmarks/make_tag_order.py rewrites data/timm_tag_order.json from the installed timm.
"""
from __future__ import annotations

import functools
import json
from importlib import metadata, resources

SHIPPED = "timm_tag_order.json"
NAMESPACE = "timm_tag_order"     # the user cache's entries


def installed_timm() -> str | None:
    """The installed timm's version, without importing it; None when its metadata cannot be read."""
    try:
        return metadata.version("timm")
    except metadata.PackageNotFoundError:
        return None


def asked_of_timm(arch: str) -> tuple[str, ...]:
    import timm

    return tuple(name.partition(".")[2] for name in timm.models.get_arch_pretrained_cfgs(arch))


@functools.lru_cache(maxsize=1)
def shipped() -> dict:
    """{"timm": version, "orders": {arch: [tag, ...]}} as packaged; {} when unreadable."""
    try:
        table = json.loads(resources.files("zoo.models").joinpath("data", SHIPPED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) and isinstance(table.get("orders"), dict) else {}


def _tags(value) -> bool:
    return isinstance(value, list) and all(isinstance(tag, str) for tag in value)


@functools.lru_cache(maxsize=None)
def timm_tag_order(arch: str) -> tuple[str, ...]:
    """`arch`'s weight tags in the installed timm's pretrained order; empty for an architecture timm does not know."""
    from ..store.user_cache import UserCache     # a leaf utility; NB: imported here, zoo.runs sits above zoo.models

    installed, table = installed_timm(), shipped()
    if installed and table.get("timm") == installed and _tags(table["orders"].get(arch)):
        return tuple(table["orders"][arch])
    key = {"arch": arch, "timm": installed}
    cache = UserCache(NAMESPACE)
    kept = cache.get(key, _tags) if installed else None
    if _tags(kept):
        return tuple(kept)
    tags = asked_of_timm(arch)
    if installed:
        cache.put(key, list(tags), {"from": "timm.models.get_arch_pretrained_cfgs"})
    return tags

