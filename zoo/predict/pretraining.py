"""The seeds' pre-training compute on TPU v3 (issue 40, item 5): the ViT paper's Table 2 TPUv3-core-days
recomputed by the training prediction (zoo.predict.train on the "TPU v3" sheet, DEVICE, an EXTRAPOLATION of the
GPU-fitted factors) with each paper's own recipe. Rows for zoo.report (results/tpu_pretraining.json) and
benchmarks/vit_tpu_core_days.py; docs/training.md explains them.

Dosovitskiy et al., "An Image is Worth 16x16 Words", arXiv:2010.11929v2 (ICLR 2021):
- Table 2, row "TPUv3-core-days": ViT-H/14 (JFT) 2.5k, ViT-L/16 (JFT) 0.68k, ViT-L/16 (I21k) 0.23k, BiT-L 9.9k.
- Section 4.2: "the number of TPU v3 cores (2 per chip) used for training multiplied by the training time in days".
- Section 4.1: JFT "18k classes and 303M high-resolution images", ImageNet-21k "21k classes and 14M images";
  Adam (beta1 0.9, beta2 0.999), batch 4096, weight decay 0.1 (counted as torch's AdamW: the same kernels).
- Appendix B.1, Table 3 ("Training resolution is 224"): epochs ViT-L/16 on JFT-300M "7/14", ViT-H/14 14,
  ViT-L/{16,32} on ImageNet-21k "30/90". Which Table 2 trained is not stated: both readings are rows.
- Appendix C, Table 6 (exaFLOPs): ViT-L/16 7 epochs 783, 14 epochs 1567; ViT-H/14 14 epochs 4262: a check of
  the counted FLOPs per image, never fitted.
Kolesnikov et al., "Big Transfer (BiT)", arXiv:1912.11370v3, section 3.3: BiT-L is ResNet152x4 (bit_r152x4), SGD
with momentum 0.9, 224 px, 40 epochs on JFT-300M, batch 4096 "on a Cloud TPUv3-512, resulting in 8 images per
chip" (4096 / 512 cores: 16 per chip of two cores). The batch per chip of the ViT runs is not stated: 32.
NB: the pre-training head (an MLP with one tanh hidden layer on 18k or 21k classes) is counted as timm's
1000-class linear head, under 0.1% of the step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEVICE = "TPU v3"
VIT_PAPER = "arXiv:2010.11929v2"
BIT_PAPER = "arXiv:1912.11370v3"
JFT, I21K = 303_000_000, 14_000_000          # ViT paper section 4.1: "303M", "14M" images
VIT_BATCH_PER_CHIP = 32                      # not stated by the paper (docs/training.md shows what it changes)
TORCH = (2, 9)          # the release whose factors time the step, named: the committed rows do not follow the installed


@dataclass(frozen=True)
class Recipe:
    model: str
    pretraining: str
    images: int                       # one epoch
    epochs: int
    paper_core_days: int              # ViT paper Table 2
    optimizer: str                    # torch.optim's name of the paper's optimizer
    source: str                       # where the recipe is stated
    paper_exaflops: Optional[int] = None   # ViT paper Table 6, where it gives the run
    batch_per_chip: Optional[int] = None   # where the paper states it


RECIPES = (
    Recipe("vit_h14", "JFT-300M", JFT, 14, 2500, "adamw", f"{VIT_PAPER} Table 3", 4262),
    Recipe("vit_l16", "JFT-300M", JFT, 14, 680, "adamw", f"{VIT_PAPER} Table 3 (7/14)", 1567),
    Recipe("vit_l16", "JFT-300M", JFT, 7, 680, "adamw", f"{VIT_PAPER} Table 3 (7/14)", 783),
    Recipe("vit_l16", "ImageNet-21k", I21K, 90, 230, "adamw", f"{VIT_PAPER} Table 3 (30/90)"),
    Recipe("vit_l16", "ImageNet-21k", I21K, 30, 230, "adamw", f"{VIT_PAPER} Table 3 (30/90)"),
    Recipe("bit_r152x4", "JFT-300M", JFT, 40, 9900, "sgd", f"{BIT_PAPER} section 3.3", batch_per_chip=16),
)


def predicted_step(sheet, model: str, batch: int, optimizer: str) -> dict:
    """The predicted training step on the TPU's sheet at 224 px, bf16, `batch` per chip, with its counted FLOPs per
    image."""
    from ..runs.request import Request
    from .train import predict_train, train_step_ops

    request = Request(model, 224, batch, "bf16", train=True, optimizer=optimizer)
    row = predict_train(request, sheet, torch=TORCH)
    ops = train_step_ops(request, fused_attention=False)
    row["train_flops_per_image"] = sum(flops * n for _, flops, _, n in ops) / batch
    return row


def core_days(step: dict, images: int, epochs: int, batch: int, cores_per_chip: int) -> tuple[float, float, float]:
    """(expected, fast, slow) TPU core-days of the schedule (analysis.predict.schedule on one chip: chip-days do not
    depend on the chip count but through the all-reduce, which is not counted)."""
    from analysis.predict.schedule import schedule

    rate = step["train_imgs_per_s"]
    band = (step["train_imgs_per_s_p10"] / rate, step["train_imgs_per_s_p90"] / rate)
    hours = schedule(step["train_step_ms"] / 1e3, band, batch, epochs, images, 1, 0.0)
    return tuple(hours[f"train_device_hours{end}"] * cores_per_chip / 24 for end in ("", "_fast", "_slow"))


def predicted_rows(sheet, vit_batch_per_chip: int = VIT_BATCH_PER_CHIP) -> list[dict]:
    """One row per recipe on the TPU's sheet (DEVICE's: the caller resolves it): the predicted step, its core-days
    with the band, and the paper's figures."""
    steps, rows = {}, []
    for r in RECIPES:
        batch = r.batch_per_chip or vit_batch_per_chip
        key = (r.model, batch, r.optimizer)
        step = steps[key] = steps.get(key) or predicted_step(sheet, *key)
        days, fast, slow = core_days(step, r.images, r.epochs, batch, sheet.cores_per_chip)
        rows.append({"predicted": True, "device": sheet.name, "model": r.model, "pretraining": r.pretraining,
                     "epochs": r.epochs, "batch_per_chip": batch, "optimizer": r.optimizer,
                     "images_seen": r.epochs * r.images, "train_gflops_per_image": step["train_flops_per_image"] / 1e9,
                     "paper_gflops_per_image": r.paper_exaflops * 1e9 / (r.epochs * r.images) if r.paper_exaflops
                     else None, "imgs_per_s": step["train_imgs_per_s"],
                     "imgs_per_s_p10": step["train_imgs_per_s_p10"], "imgs_per_s_p90": step["train_imgs_per_s_p90"],
                     "core_days": days, "core_days_fast": fast, "core_days_slow": slow,
                     "paper_core_days": r.paper_core_days, "recipe_source": r.source,
                     "band_from": step["train_band_from"]})
    return rows
