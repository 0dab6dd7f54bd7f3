"""The words every layer shares, defined once: dtypes, devices, attention paths, components.

Rows, the command line, the harness and the reports all spell a dtype as "fp32" / "bf16" / "fp16"
and a device as "cpu" / "cuda" (with "auto" on the command line); nothing else is ever written.
"""
from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# dtype names; DTYPES maps each to its torch dtype (built on first use: the words load without torch).
# Timing applies bf16/fp16 through autocast (weights stay fp32); counting builds the model in that dtype.
DTYPE_NAMES = ("fp32", "bf16", "fp16")
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}     # bytes per element (torch dtype.itemsize)
DEVICES = ("auto", "cpu", "cuda")

# Where a model's MACs go (analysis.count.components classifies module paths into these).
COMPONENTS = ("patch_embed", "attn_proj", "attn_matmul", "mlp", "conv", "head", "other")


def __getattr__(name: str):
    if name == "DTYPES":
        return _torch_dtypes()
    raise AttributeError(f"module 'analysis.vocab' has no attribute {name!r}")


def _torch_dtypes() -> dict[str, torch.dtype]:
    """DTYPES: dtype name -> torch dtype."""
    import torch

    found = globals().get("DTYPES")
    if found is None:
        found = globals()["DTYPES"] = dict(zip(DTYPE_NAMES, (torch.float32, torch.bfloat16, torch.float16)))
    return found


def dtype_name(dtype: torch.dtype | str) -> str:
    """torch.bfloat16 -> "bf16"; a name is checked and returned."""
    if isinstance(dtype, str):
        if dtype not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPE_NAMES)}")
        return dtype
    for name, value in _torch_dtypes().items():
        if value == dtype:
            return name
    raise ValueError(f"unsupported dtype {dtype}; expected one of {', '.join(DTYPE_NAMES)}")


def torch_dtype(dtype: torch.dtype | str) -> torch.dtype:
    return _torch_dtypes()[dtype_name(dtype)]


def resolve_device(device: str | torch.device) -> torch.device:
    """"auto" is cuda when a GPU is visible, else cpu; "cuda" without a GPU raises ValueError."""
    import torch

    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda", "meta"):
        raise ValueError(f"unsupported device {str(device)!r}; expected one of {', '.join(DEVICES)}")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r}: no CUDA GPU is available on this machine")
    return resolved


def attention_path(fused_ops: set[str], math_ops: set[str]) -> str:
    """The one format for how attention ran: "fused:<ops>", "math:<ops>", "mixed:<ops>" or "none".

    Ops are aten op names seen computing attention's QK^T and AV (analysis.count reads them off the
    dispatcher), e.g. "fused:_scaled_dot_product_flash_attention_for_cpu" or "math:bmm".
    """
    ops = sorted(fused_ops | math_ops)
    if not ops:
        return "none"
    kind = "fused" if not math_ops else "math" if not fused_ops else "mixed"
    return f"{kind}:{'+'.join(ops)}"


def described(doc: str, unit: str = "", required: bool = False, default=None, key: str | bool = False,
              key_fields: tuple = ()):
    """A result field with its meaning and unit, read by the row schema (zoo.store.schema) and the README's
    table; `required`: set on every measured row. The schema's own fields also say their part in a row's key:
    `key` "measurement" (identifies what was measured: a later row replaces an earlier one) or "resume" (also
    part of --resume's key); `key_fields`: only these entries of a dict field are, and only on timed rows."""
    return field(default=default, metadata={"doc": doc, "unit": unit, "key": key, "required": required,
                                            "key_fields": key_fields})
