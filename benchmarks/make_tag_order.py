"""Rewrite zoo/models/data/timm_tag_order.json from the installed timm (a developer tool, never imported at run time).

    python benchmarks/make_tag_order.py

The table holds, for every architecture the registry maps to (zoo.models.cards.TIMM_ARCHS), its weight tags in
timm.models.get_arch_pretrained_cfgs(arch)'s order (zoo/models/data/README.md says what reads it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from zoo.models.cards import TIMM_ARCHS  # noqa: E402
from zoo.models.tag_order import SHIPPED, asked_of_timm, installed_timm  # noqa: E402


def write_shipped(folder: Path) -> Path:
    """The table for every architecture the registry maps to, from the installed timm."""
    archs = sorted({arch for archs in TIMM_ARCHS.values() for arch in archs})
    table = {"timm": installed_timm(), "from": "timm.models.get_arch_pretrained_cfgs(arch), in its order",
             "orders": {arch: list(asked_of_timm(arch)) for arch in archs}}
    path = folder / SHIPPED
    path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_shipped(ROOT / "zoo" / "models" / "data"))
