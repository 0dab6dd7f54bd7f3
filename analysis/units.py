"""The units figures are kept and shown in, defined once. Memory is shown in binary units (MiB = 2^20 bytes, GiB =
2^30), a device's own memory and bandwidth in its datasheet's decimal ones (GB = 1e9 bytes); MACs per image in
GMACs (1e9), FLOPs = 2 x MACs. SHOWN: how a table shows each unit the row schema gives a field (zoo.store.schema,
analysis.vocab.described): how a value is converted and the unit the header then names."""
from __future__ import annotations

from typing import Callable

KIB = 2 ** 10
MIB = 2 ** 20
GIB = 2 ** 30
GB = 1e9
TERA = 1e12          # TFLOP/s

SHOWN: dict[str, tuple[Callable[[float], float], str]] = {
    "MACs per image": (lambda v: v / 1e9, "GMACs / image"),
    "MACs per window": (lambda v: v / 1e9, "GMACs / window"),
    "bytes per batch": (lambda v: v / MIB, "MiB / batch"),
    "bytes": (lambda v: v / MIB, "MiB"),
    "fraction": (lambda v: 100 * v, "%"),
    "%": (lambda v: v, "%"),
    "images/s": (lambda v: v, "img/s"),
    "ms per batch": (lambda v: v, "ms / batch"),
}
