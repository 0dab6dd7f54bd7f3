"""The device check's first step (benchmarks/device_plan.py --machine): the machine, its GPU and the library
versions the other steps run with, printed into machine.txt; exit 1 where torch or CUDA is missing.
Standard library at import, so it runs (and says what is missing) on any machine."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys


def print_machine() -> int:
    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"host: {platform.node()}; {platform.platform()}; python {platform.python_version()} ({sys.executable})")
    print(f"cpu cores: {os.cpu_count()}, available {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")
    for query in (["nvidia-smi"], ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                                 "power.limit,persistence_mode,mig.mode.current", "--format=csv"]):
        try:
            done = subprocess.run(query, capture_output=True, text=True, timeout=15)
            print(done.stdout.rstrip() or done.stderr.rstrip())
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"{query[0]}: {e}")
    try:
        import torch
    except ImportError as e:
        print(f"torch: not importable ({e})")
        return 1
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
          f"{torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}")
    for name in ("timm", "torchvision", "pytest", "pytest_benchmark", "pandas"):
        try:
            module = __import__(name)
            print(f"{name} {getattr(module, '__version__', '?')}")
        except ImportError:
            print(f"{name}: not installed")
    if not torch.cuda.is_available():
        print("CUDA: not available")
        return 1
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        print(f"cuda:{index} {props.name}, capability {props.major}.{props.minor}, "
              f"{props.total_memory / 2**30:.1f} GiB, {props.multi_processor_count} SMs")
    backends = torch.backends.cuda
    print(f"sdpa enabled: flash={backends.flash_sdp_enabled()} mem_efficient={backends.mem_efficient_sdp_enabled()} "
          f"cudnn={backends.cudnn_sdp_enabled()} math={backends.math_sdp_enabled()}")
    print(f"tf32: matmul={backends.matmul.allow_tf32} cudnn={torch.backends.cudnn.allow_tf32} "
          f"float32_matmul_precision={torch.get_float32_matmul_precision()}")
    return 0
