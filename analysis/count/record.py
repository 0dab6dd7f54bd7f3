"""What counting one module at one input size gives: the cost record, typed (its fields carry meaning and unit).

MACs are per image (FLOPs = 2 x MACs); activation peaks are per batch (what the batch needs at once).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from ..vocab import described


@dataclass
class CostRecord:
    params: int = described("parameters (shared ones once)", required=True)
    trainable_params: Optional[int] = described("parameters that require grad")
    params_by_component: Optional[dict] = described("parameters per component")
    macs: int = described("multiply-accumulates of one forward pass", "MACs per image", required=True)
    attn_macs: Optional[int] = described("attention's QK^T and AV", "MACs per image")
    attn_share: Optional[float] = described("attn_macs / macs", "fraction")
    macs_by_component: Optional[dict] = described("MACs per component (patch_embed, attn_proj, attn_matmul, mlp, "
                                                  "conv, head, other)", "MACs per image")
    attn_path: Optional[str] = described("how attention ran: fused:<kernel>, math:<ops>, mixed:..., none")
    act_peak_bytes: int = described("peak of live activations in one forward, weights and input excluded",
                                    "bytes per batch", required=True)
    act_peak_by_component: Optional[dict] = described("live activation bytes per component at the peak",
                                                      "bytes per batch")
    cuda_peak_bytes: Optional[int] = described("torch.cuda.max_memory_allocated during the forward (CUDA only)",
                                               "bytes per batch")
    head_classes: Optional[int] = described("outputs of the classifier head counted (the module's num_classes, "
                                            "timm's convention): 1000 for the registry's ImageNet-1k heads, timm's "
                                            "default config's for timm:NAME (0: no head, the pooled features, as "
                                            "for eva02 / dinov2 checkpoints); null for a module that is no "
                                            "classifier (feature extractor, detector, segmenter)", "classes")
    weight_bytes: Optional[int] = described("parameters and buffers at the row's dtype", "bytes")
    dtype: Optional[str] = described("dtype the model was counted in (fp32, bf16, fp16)")
    train_macs: Optional[int] = described("forward + backward of one training step", "MACs per image")
    train_backward_macs: Optional[int] = described("the backward part of train_macs", "MACs per image")
    train_act_peak_bytes: Optional[int] = described("peak of live activations in a training step, gradients "
                                                    "excluded", "bytes per batch")
    train_cuda_peak_bytes: Optional[int] = described("CUDA allocator peak of a training step", "bytes per batch")
    uncounted_ops: Optional[list] = described("matmul- or conv-like ops that ran without a MAC rule (should be "
                                              "empty)")
    bytes_moved: Optional[int] = described("bytes one forward's ops read and write, unfused eager traffic, views "
                                           "free (analysis.count.traffic)", "bytes per batch")
    non_mac_flops: Optional[int] = described("FLOPs besides MACs: norms, softmax, activations, elementwise "
                                             "(convention in analysis.count.traffic)", "FLOPs per batch")
    arithmetic_intensity: Optional[float] = described("(2 x macs x batch + non_mac_flops) / bytes_moved",
                                                      "FLOPs per byte")
    bytes_by_op_class: Optional[dict] = described("bytes_moved per operator class (matmul_conv, attention, norm, "
                                                  "elementwise, data_movement)", "bytes per batch")
    bytes_by_component: Optional[dict] = described("bytes_moved per component", "bytes per batch")
    arithmetic_intensity_by_component: Optional[dict] = described("FLOPs (2 x MACs + non-MAC) / bytes_moved of "
                                                                  "each component", "FLOPs per byte")

    def as_dict(self) -> dict:
        return asdict(self)
