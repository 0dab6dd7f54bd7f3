"""Every model of the comparison, as data: one row per registry name.

Scratch ViTs are decoded from "<variant><patch>" (big_vision style) through the paper's Table 1.
timm-backed rows name the timm model, the paper and the native resolution at which that paper
reports ImageNet-1k accuracy (and at which timm's ImageNet-1k checkpoint for it was made).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .spec import AtLeast, ModelSpec, MultipleOf
from .configs import VITDET_VARIANTS, ViTConfig, vitdet_config

VIT_PAPER = "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words (ICLR, arXiv:2010.11929)"


@dataclass(frozen=True)
class Family:
    paper: str                        # where its models come from
    plotted: bool = True              # a colour and marker of its own in the report's plots (else drawn as "other")
    stem_first: bool = False          # timm's feature extractor returns the stem's map first (zoo.models.features)


# The one family table, in the order plots and tables list families (zoo.report.families derives its styles
# from it, zoo.models.features its stem rule); each spec below names its family here.
FAMILIES: dict[str, Family] = {
    "vit": Family(VIT_PAPER),
    "deit": Family("Touvron et al. 2021, Training data-efficient image transformers (ICML, arXiv:2012.12877)"),
    "swin": Family("Liu et al. 2021, Swin Transformer (ICCV, arXiv:2103.14030)"),
    "convnext": Family("Liu et al. 2022, A ConvNet for the 2020s (CVPR, arXiv:2201.03545)"),
    "bit": Family("Kolesnikov et al. 2020, Big Transfer (BiT) (ECCV, arXiv:1912.11370)", stem_first=True),
    "resnet": Family("He et al. 2016, Deep Residual Learning for Image Recognition (CVPR, arXiv:1512.03385)",
                     stem_first=True),
    "regnet": Family("Radosavovic et al. 2020, Designing Network Design Spaces (CVPR, arXiv:2003.13678)",
                     stem_first=True),
    "efficientnet": Family("Xie et al. 2020, Self-training with Noisy Student (CVPR, arXiv:1911.04252)",
                           stem_first=True),
    "beit": Family("Bao et al. 2022, BEiT: BERT Pre-Training of Image Transformers (ICLR, arXiv:2106.08254)"),
    "eva": Family("Fang et al. 2024, EVA-02: A Visual Representation for Neon Genesis (arXiv:2303.11331)"),
    "hybrid": Family(VIT_PAPER),
    "vitdet": Family("Li et al. 2022, Exploring Plain Vision Transformer Backbones for Object Detection (ECCV, "
                     "arXiv:2203.16527)", plotted=False),    # a detection backbone: in no classification plot
}

# ViT paper, Table 1: width D, depth L, heads (MLP size is 4D for every variant).
# Ti and S are not in the paper; they are DeiT's / AugReg's widths, used by timm's vit_tiny/small.
VIT_VARIANTS = {
    "ti": (192, 12, 3), "s": (384, 12, 6), "b": (768, 12, 12), "l": (1024, 24, 16), "h": (1280, 32, 16),
}
TIMM_VIT_WIDTH = {"ti": "tiny", "s": "small", "b": "base", "l": "large", "h": "huge"}
SCRATCH_VITS = ("ti16", "s16", "b16", "b32", "b8", "l16", "l32", "h14")
CNN_MIN_SIZE = AtLeast(32, "total stride 32: the last stage keeps one pixel")
SWIN_RULE = MultipleOf(32, "patch 4 and three 2x2 merges give whole grids at every stage; timm pads "
                           "a grid that is not a multiple of the 7x7 window and shrinks the window "
                           "to grids smaller than it")


VARIANT_PATCH = re.compile(r"(?P<variant>[a-z]+)(?P<patch>\d+)")   # "b16" -> ("b", 16), big_vision style


def _scratch_vit(short: str) -> ModelSpec:
    parsed = VARIANT_PATCH.fullmatch(short)
    if parsed is None or parsed["variant"] not in VIT_VARIANTS:
        raise ValueError(f"{short!r} is not <variant><patch> with a variant of {', '.join(VIT_VARIANTS)}")
    variant, patch = parsed["variant"], int(parsed["patch"])
    dim, depth, heads = VIT_VARIANTS[variant]
    return ModelSpec(
        name=f"vit_{short}", family="vit", source="scratch", native_size=224, paper=VIT_PAPER,
        rule=MultipleOf(patch, "the patch size; position embeddings are resampled"),
        timm_name=f"vit_{TIMM_VIT_WIDTH[variant]}_patch{patch}_224", patch_size=patch, num_prefix_tokens=1,
        vit_config=ViTConfig(patch_size=patch, embed_dim=dim, depth=depth, num_heads=heads))


def _vitdet(variant: str) -> ModelSpec:
    """ViTDet's backbone as detectron2 builds it; timm's SAM ViT encoder has the same blocks."""
    return ModelSpec(name=f"vitdet_{variant}16", family="vitdet", source="scratch", native_size=1024,
                     paper=FAMILIES["vitdet"].paper,
                     rule=MultipleOf(32, "patch 16 and the pyramid's stride-32 level (a 2x2 max pool of the "
                                         "stride-16 map); windows pad the grid, the position embedding is resampled"),
                     timm_name=f"samvit_{TIMM_VIT_WIDTH[variant]}_patch16", patch_size=16,
                     vit_config=vitdet_config(variant))


def _vit_like(name, family, timm_name, patch, prefix=1, native=224) -> ModelSpec:
    return ModelSpec(name=name, family=family, source="timm", native_size=native, paper=FAMILIES[family].paper,
                     rule=MultipleOf(patch, "the patch size; position embeddings are resampled"),
                     timm_name=timm_name, patch_size=patch, num_prefix_tokens=prefix)


def _cnn(name, family, timm_name, native=224) -> ModelSpec:
    return ModelSpec(name=name, family=family, source="timm", native_size=native, paper=FAMILIES[family].paper,
                     rule=CNN_MIN_SIZE, timm_name=timm_name, accepts_img_size=False)


def catalog() -> list[ModelSpec]:
    specs = [_scratch_vit(short) for short in SCRATCH_VITS]
    specs.append(ModelSpec(name="vit_r50_b16", family="hybrid", source="scratch", native_size=224, paper=VIT_PAPER,
                           rule=MultipleOf(16, "the R50 stem's stride; position embeddings are resampled"),
                           timm_name="vit_base_r50_s16_224", patch_size=16, num_prefix_tokens=1,
                           vit_config=ViTConfig(patch_size=16, embed_dim=768, depth=12, num_heads=12)))
    for size, width in (("ti", "tiny"), ("s", "small"), ("b", "base")):
        specs.append(_vit_like(f"deit_{size}", "deit", f"deit_{width}_patch16_224", 16))
        specs.append(_vit_like(f"deit_{size}_distilled", "deit", f"deit_{width}_distilled_patch16_224", 16, prefix=2))
    specs += [ModelSpec(name=f"swin_{s}", family="swin", source="timm", native_size=224, paper=FAMILIES["swin"].paper,
                        rule=SWIN_RULE, timm_name=f"swin_{w}_patch4_window7_224", patch_size=4)
              for s, w in (("t", "tiny"), ("s", "small"), ("b", "base"), ("l", "large"))]
    specs += [_cnn(f"convnext_{s}", "convnext", f"convnext_{w}")
              for s, w in (("t", "tiny"), ("s", "small"), ("b", "base"), ("l", "large"), ("xl", "xlarge"))]
    # Native sizes are those of timm's in21k_ft_in1k checkpoints (pretrained cfgs): 448 for x1/x2, 480 for
    # R152x4. The BiT repository's bit_hyperrule.py fine-tunes ImageNet at 480 (resize 512, crop 480;
    # google-research/big_transfer 140de6e), so its README's re-runs are at 480; the paper's own rule (384,
    # 480 for R152x4 only, per issue 19's review) was not opened here.
    specs += [_cnn("bit_r50x1", "bit", "resnetv2_50x1_bit", 448), _cnn("bit_r101x1", "bit", "resnetv2_101x1_bit", 448),
              _cnn("bit_r152x2", "bit", "resnetv2_152x2_bit", 448), _cnn("bit_r152x4", "bit", "resnetv2_152x4_bit", 480)]
    specs += [_cnn("resnet50", "resnet", "resnet50"),
              _vit_like("beit_b16", "beit", "beit_base_patch16_224", 16),
              _vit_like("eva02_b14", "eva", "eva02_base_patch14_448", 14, native=448),
              _cnn("regnety_160", "regnet", "regnety_160"),
              _cnn("effnet_l2", "efficientnet", "tf_efficientnet_l2", 800)]
    specs += [_vitdet(variant) for variant in VITDET_VARIANTS]
    return specs
