"""Environment fingerprint attached to every throughput record: the machine and its library versions.

A number without the machine and settings that produced it cannot be reproduced or compared.
"""
from __future__ import annotations

import contextlib
import os
import platform
import re
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch


@lru_cache(maxsize=1)
def cpu_model_name() -> str:
    """'model name' from /proc/cpuinfo (Linux), else platform.processor(), else 'unknown'."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def available_cores() -> int:
    """Cores this process may run on (respects taskset / cgroup affinity where the OS reports it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def package_version(name: str) -> Optional[str]:
    """`name.__version__`, read from the installed metadata when the package is not imported yet (importing
    timm costs seconds); None when it is not installed."""
    import importlib.metadata

    if name in sys.modules:
        return getattr(sys.modules[name], "__version__", None)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        try:
            return importlib.import_module(name).__version__
        except ImportError:
            return None


def timm_version() -> Optional[str]:
    return package_version("timm")


def torch_version() -> str:
    """torch.__version__ with its build tag ("2.14.1+cu130", which the package metadata lacks), read from
    torch/version.py while torch is not imported (importing it takes over a second): the same either way."""
    if "torch" in sys.modules:
        return str(sys.modules["torch"].__version__)
    import importlib.util

    try:
        folder = importlib.util.find_spec("torch").submodule_search_locations[0]
        with open(os.path.join(folder, "version.py"), encoding="utf-8") as f:
            return re.search(r"^__version__(?:\s*:\s*str)?\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M).group(1)
    except (AttributeError, TypeError, IndexError, OSError):    # not found or another layout: ask torch
        import torch

        return str(torch.__version__)


def gpu_name(device: torch.device) -> Optional[str]:
    import torch

    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(device)


def tf32_setting() -> str:
    """TF32 state for fp32 work: cuBLAS matmul and cuDNN conv flags, plus the float32 matmul precision."""
    import torch

    matmul = torch.backends.cuda.matmul.allow_tf32
    cudnn = torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    return f"matmul={'on' if matmul else 'off'},cudnn={'on' if cudnn else 'off'},precision={precision}"


def sdpa_backends(device: torch.device) -> str:
    """Which scaled_dot_product_attention kernels are enabled (CUDA); on CPU torch picks its own."""
    import torch

    if device.type != "cuda":
        return "cpu"
    cuda = torch.backends.cuda
    enabled = [name for name, on in (("flash", cuda.flash_sdp_enabled()),
                                     ("mem_efficient", cuda.mem_efficient_sdp_enabled()),
                                     ("cudnn", cuda.cudnn_sdp_enabled()), ("math", cuda.math_sdp_enabled())) if on]
    return "+".join(enabled) or "none"


def environment_fingerprint(device: torch.device | str = "cpu") -> dict:
    """This machine, its library versions and its attention and TF32 settings, for a measurement on `device`."""
    import torch

    device = torch.device(device)
    return {"cpu_model": cpu_model_name(), "cpu_cores": os.cpu_count(), "cpu_cores_available": available_cores(),
            "gpu_name": gpu_name(device), "torch_version": torch.__version__, "timm_version": timm_version(),
            "cuda_version": torch.version.cuda,
            "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "python_version": platform.python_version(), "platform": platform.platform(),
            "sdpa_backends": sdpa_backends(device), "tf32": tf32_setting(),
            # NB: other processes on the machine share its cores; a high load explains a slow number.
            "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
