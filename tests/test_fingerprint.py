"""The machine's fingerprint: the fields docs/timing.md promises, each matching the environment; CUDA ones on a GPU."""
import os
import platform

import pytest
import timm
import torch

from analysis.timing.fingerprint import environment_fingerprint

# What docs/timing.md says every timed row's env holds: CPU, GPU, torch/timm/CUDA versions,
# SDPA backends, TF32 (and the cores and load that explain a slow number).
PROMISED = {"cpu_model", "cpu_cores", "cpu_cores_available", "gpu_name", "torch_version", "timm_version",
            "cuda_version", "cudnn_version", "python_version", "platform", "sdpa_backends", "tf32", "load_avg_1m"}


def test_every_promised_field_is_present_and_matches_the_environment():
    fingerprint = environment_fingerprint("cpu")
    assert set(fingerprint) == PROMISED
    assert fingerprint["torch_version"] == torch.__version__
    assert fingerprint["timm_version"] == timm.__version__
    assert fingerprint["cuda_version"] == torch.version.cuda
    assert fingerprint["python_version"] == platform.python_version() and fingerprint["cpu_cores"] == os.cpu_count()
    assert fingerprint["gpu_name"] is None and fingerprint["sdpa_backends"] == "cpu"  # a cpu measurement
    assert fingerprint["cpu_model"] and fingerprint["cpu_cores"] >= fingerprint["cpu_cores_available"] >= 1
    assert fingerprint["tf32"].startswith("matmul=")


def test_load_is_the_one_minute_average(monkeypatch):
    """os.getloadavg() gives the 1, 5 and 15-minute averages, in that order (Python's docs)."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 2.5, 3.5))
    assert environment_fingerprint("cpu")["load_avg_1m"] == 1.5


def test_tf32_switch_is_recorded():
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert environment_fingerprint("cpu")["tf32"].startswith("matmul=on")
        torch.backends.cuda.matmul.allow_tf32 = False
        assert environment_fingerprint("cpu")["tf32"].startswith("matmul=off")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_sdpa_backends_are_named():
    record = environment_fingerprint("cuda")
    assert record["gpu_name"] == torch.cuda.get_device_name(0)
    assert set(record["sdpa_backends"].split("+")) <= {"flash", "mem_efficient", "cudnn", "math"}
