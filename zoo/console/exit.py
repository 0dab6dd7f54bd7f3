"""A command's exit without the interpreter's last garbage collections.

At exit CPython collects every tracked object again while it tears the modules down; with torch, torch._dynamo
and timm loaded that is some 400,000 objects, about 1 s of the default compare on the 2-core dev boxes (0.3 s
with this). `gc.freeze()` moves them to the permanent generation, which no collection visits; the rest of the
exit runs as usual: atexit handlers, stdout and stderr flushed, files closed by reference counting. Only
finalizers of objects left in reference cycles do not run, as they need not when the process ends.
"""
from __future__ import annotations

import gc
import sys
from typing import NoReturn


def exit_without_collecting(status: int | None) -> NoReturn:
    """sys.exit(status), the objects alive now frozen out of the garbage collector first."""
    gc.freeze()
    sys.exit(status)
