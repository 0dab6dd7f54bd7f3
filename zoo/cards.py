"""Model cards: the ImageNet-1k top-1 each model's paper reports, with where it comes from.

Data, not code: one row per registry name, each citing the paper and table. Numbers are single-crop
top-1 on the ImageNet-1k validation set unless the note says otherwise. A model with no published
figure we could cite has no card (the tables show it empty rather than guessed).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Card:
    top1: float               # ImageNet-1k top-1 (%)
    resolution: int           # the input side at which it was evaluated
    pretraining: str          # data before ImageNet-1k fine-tuning ("IN-1k" = trained on ImageNet-1k only)
    source: str               # paper and table
    note: str = ""


VIT = "Dosovitskiy et al. 2021 (ViT)"
CARDS: dict[str, Card] = {
    # ViT, Table 5: fine-tuned at 384 after pre-training on ImageNet-21k (JFT-300M for H/14).
    "vit_b32": Card(81.28, 384, "ImageNet-21k", f"{VIT}, Table 5", "73.38 from IN-1k, 80.73 from JFT-300M"),
    "vit_b16": Card(83.97, 384, "ImageNet-21k", f"{VIT}, Table 5", "77.91 from IN-1k, 84.15 from JFT-300M"),
    "vit_l32": Card(81.37, 384, "ImageNet-21k", f"{VIT}, Table 5", "71.16 from IN-1k, 84.37 from JFT-300M"),
    "vit_l16": Card(85.15, 384, "ImageNet-21k", f"{VIT}, Table 5", "76.53 from IN-1k, 87.12 from JFT-300M"),
    "vit_h14": Card(88.55, 518, "JFT-300M", f"{VIT}, Table 2", "88.04 at 384 in Table 5; Table 2 adds "
                                                                "518px fine-tuning and Polyak averaging"),
    # DeiT, Table 5 (ImageNet-1k only; distilled rows: RegNetY-16GF teacher, distillation token).
    "deit_ti": Card(72.2, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5"),
    "deit_s": Card(79.8, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5"),
    "deit_b": Card(81.8, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5"),
    "deit_ti_distilled": Card(74.5, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5", "hard distillation"),
    "deit_s_distilled": Card(81.2, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5", "hard distillation"),
    "deit_b_distilled": Card(83.4, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5", "hard distillation"),
    "regnety_160": Card(82.9, 224, "IN-1k", "Touvron et al. 2021 (DeiT), Table 5", "RegNetY-16GF, DeiT's teacher"),
    # Swin, Table 1 (a) regular ImageNet-1k training, (b) ImageNet-22k pre-training.
    "swin_t": Card(81.3, 224, "IN-1k", "Liu et al. 2021 (Swin), Table 1(a)"),
    "swin_s": Card(83.0, 224, "IN-1k", "Liu et al. 2021 (Swin), Table 1(a)"),
    "swin_b": Card(83.5, 224, "IN-1k", "Liu et al. 2021 (Swin), Table 1(a)"),
    "swin_l": Card(86.3, 224, "ImageNet-22k", "Liu et al. 2021 (Swin), Table 1(b)", "87.3 at 384"),
    # ConvNeXt, Table 1 (ImageNet-1k training; XL only exists with ImageNet-22k pre-training).
    "convnext_t": Card(82.1, 224, "IN-1k", "Liu et al. 2022 (ConvNeXt), Table 1"),
    "convnext_s": Card(83.1, 224, "IN-1k", "Liu et al. 2022 (ConvNeXt), Table 1"),
    "convnext_b": Card(83.8, 224, "IN-1k", "Liu et al. 2022 (ConvNeXt), Table 1"),
    "convnext_l": Card(84.3, 224, "IN-1k", "Liu et al. 2022 (ConvNeXt), Table 1"),
    "convnext_xl": Card(87.0, 224, "ImageNet-22k", "Liu et al. 2022 (ConvNeXt), Table 1", "87.8 at 384"),
    # BiT-L (ResNet-152x4 on JFT-300M), as the ViT paper's Table 2 reports it.
    "bit_r152x4": Card(87.54, 480, "JFT-300M", f"{VIT}, Table 2 (BiT-L)"),
    "resnet50": Card(77.15, 224, "IN-1k", "He et al. 2016 (ResNet), Table 3", "10-crop testing (22.85% top-1 error)"),
    "beit_b16": Card(83.2, 224, "IN-1k (self-supervised BEiT)", "Bao et al. 2022 (BEiT), Table 1"),
    "effnet_l2": Card(88.4, 800, "JFT-300M (unlabelled, Noisy Student)", "Xie et al. 2020 (Noisy Student), Table 2"),
}


def card(name: str) -> dict | None:
    found = CARDS.get(name)
    return asdict(found) if found else None
