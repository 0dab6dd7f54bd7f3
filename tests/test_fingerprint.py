"""Environment fingerprint fields and attention-path detection."""

import timm
import torch
import torch.nn as nn
from timm.layers import Attention as TimmAttention

import zoo
from analysis.fingerprint import FINGERPRINT_FIELDS, attention_path, environment_fingerprint


def test_every_field_is_present_and_matches_the_environment():
    fingerprint = environment_fingerprint("cpu", "bf16", threads=2)
    assert tuple(fingerprint) == FINGERPRINT_FIELDS
    assert fingerprint["torch_version"] == torch.__version__
    assert fingerprint["timm_version"] == timm.__version__
    assert fingerprint["cuda_version"] == torch.version.cuda
    assert fingerprint["threads"] == 2 and fingerprint["dtype"] == "bf16"
    assert fingerprint["gpu_name"] is None  # cpu measurement
    assert fingerprint["cpu_model"] and fingerprint["cpu_cores"] >= fingerprint["cpu_cores_available"] >= 1
    assert fingerprint["tf32"].startswith("matmul=")


def test_threads_default_to_the_current_torch_setting():
    assert environment_fingerprint("cpu")["threads"] == torch.get_num_threads()


def test_attention_path_of_timm_modules():
    fused = TimmAttention(16, num_heads=2)
    fused.fused_attn = True
    manual = TimmAttention(16, num_heads=2)
    manual.fused_attn = False
    assert attention_path(fused, torch.device("cpu")) == "sdpa[cpu]"
    assert attention_path(manual, torch.device("cpu")) == "math"
    assert attention_path(nn.Sequential(fused, manual), torch.device("cpu")) == "mixed:math+sdpa"


def test_attention_path_of_the_scratch_vit_and_of_a_cnn():
    tiny = dict(img_size=32, patch_size=16, embed_dim=32, depth=1, num_heads=2, num_classes=10)
    for impl in ("sdpa", "math"):
        vit = zoo.VisionTransformer(zoo.ViTConfig(attn_impl=impl, **tiny))
        assert attention_path(vit, torch.device("cpu")) == ("sdpa[cpu]" if impl == "sdpa" else "math")
    assert attention_path(nn.Conv2d(3, 4, 3), torch.device("cpu")) == "none"
    assert attention_path(None, torch.device("cpu")) == "unknown"


def test_cuda_sdpa_backends_are_named():
    record = environment_fingerprint("cuda", "fp16", threads=1, model=TimmAttention(16, num_heads=2))
    assert record["attention_path"].startswith("sdpa[") or record["attention_path"] == "math"
    assert record["gpu_name"] == (torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
