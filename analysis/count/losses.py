"""The training losses a task's step runs, so the count holds what they save for backward and what their
backward allocates: cross-entropy over the classes, as timm's train.py (classification) and mmsegmentation's
decode heads (per pixel, on logits resized to the label) compute it.

Cross-entropy is log_softmax + nll_loss; log_softmax keeps its (B, classes[, H, W]) output for backward, and the
backward writes a gradient of that size for each of nll_loss and log_softmax. Under autocast both run in fp32
(analysis.count.autocast FP32_OPS), so half-precision logits are first copied to fp32. The targets are class
indices (int64) on the logits' device, made inside the step: counted, as a label batch on the GPU is.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

# mmsegmentation configs/_base_/models/upernet_*.py: loss_decode CrossEntropyLoss loss_weight 1.0 on the decode
# head, 0.4 on the auxiliary head
SEGMENTATION_WEIGHTS = (1.0, 0.4)


def classification_loss(logits: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of a classifier's (B, classes) logits (or of (B, classes, H, W) ones, per pixel) against class
    indices, (B,) or (B, H, W)."""
    targets = torch.zeros((logits.shape[0], *logits.shape[2:]), dtype=torch.long, device=logits.device)
    return F.cross_entropy(logits, targets)


def segmentation_loss(outs) -> torch.Tensor:
    """Weighted per-pixel cross-entropy of each head's (B, classes, H, W) logits: decode head, auxiliary head."""
    return sum(weight * classification_loss(logits) for weight, logits in zip(SEGMENTATION_WEIGHTS, outs))
