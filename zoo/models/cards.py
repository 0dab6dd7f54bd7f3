"""Model cards: the ImageNet-1k accuracies the authors published for each registry model, one entry per
weights x resolution, each with its source; and which timm weights each registry model stands for.

Data, not code. timm's own evaluations live in data/timm_results.csv; zoo.models.accuracy merges both.
Every number below was typed from the cited source. `source` says what it is: "paper" (a table of the
architecture's paper) or "repository" (the authors' README or notebook, often a re-released checkpoint).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .pretraining import PRETRAINING

# The pretraining vocabulary (what data the weights, or a teacher they learned from, saw besides ImageNet-1k)
# is defined once, in zoo.models.pretraining.
CROPS = ("single", "10-crop")
SOURCES = ("paper", "repository", "timm")   # a paper table; the authors' repository; timm's evaluation


@dataclass(frozen=True)
class AccuracyEntry:
    top1: float                    # ImageNet-1k val top-1 (%)
    top5: float | None
    img_size: int                  # the input side it was evaluated at
    pretraining: str               # a key of PRETRAINING
    crops: str                     # "single" or "10-crop"
    source: str                    # "paper", "repository" or "timm"
    citation: str                  # paper + table, or repository + file
    weights: str | None = None     # the timm `model.tag` these are the numbers of; None: no timm weights match
    real: float | None = None      # ImageNet-ReaL top-1 (timm entries; a paper entry where the source gives it)
    imagenet_v2: float | None = None   # ImageNetV2 matched-frequency top-1
    sketch: float | None = None        # ImageNet-Sketch top-1
    imagenet_r: float | None = None    # ImageNet-R top-1 (200 classes)
    imagenet_a: float | None = None    # ImageNet-A top-1 (200 classes)
    crop_pct: float | None = None      # timm's eval centre-crop fraction
    note: str = ""

    def __post_init__(self):
        if self.pretraining not in PRETRAINING:
            raise ValueError(f"pretraining {self.pretraining!r} is not one of {', '.join(PRETRAINING)}")
        if self.crops not in CROPS or self.source not in SOURCES:
            raise ValueError(f"crops {self.crops!r} / source {self.source!r} not in {CROPS} / {SOURCES}")

    def as_dict(self) -> dict:
        return asdict(self)


def _p(top1, top5, img_size, pretraining, citation, weights=None, **extra) -> AccuracyEntry:
    """A paper table's entry; extra: AccuracyEntry's other fields (note, crops "single" unless given, ...)."""
    return AccuracyEntry(top1, top5, img_size, pretraining, extra.pop("crops", "single"), "paper", citation, weights,
                         **extra)


def _r(top1, top5, img_size, pretraining, citation, weights=None, **extra) -> AccuracyEntry:
    """An entry of the authors' repository (README, notebook, model zoo); extra as for _p."""
    return AccuracyEntry(top1, top5, img_size, pretraining, extra.pop("crops", "single"), "repository", citation,
                         weights, **extra)


# Sources (a paper that could not be opened from this workspace says so in the entry's note)
VIT_T5 = "Dosovitskiy et al. 2021 (ViT), Table 5"
VIT_T2 = "Dosovitskiy et al. 2021 (ViT), Table 2"
VIT_T6 = "Dosovitskiy et al. 2021 (ViT), Table 6"
VIT_README = "google-research/vision_transformer README.md (update of 29.10.2020)"
AUGREG_README = "google-research/vision_transformer README.md (recommended AugReg checkpoints = Steiner et al. " \
                "2022, Table 3, i21k 300ep column)"
AUGREG_NB = "google-research/vision_transformer vit_jax_augreg.ipynb (best imagenet2012 fine-tune per model)"
DEIT = "facebookresearch/deit README_deit.md (Model Zoo: the repository's released checkpoints)"
SWIN = "microsoft/Swin-Transformer README.md (Main Results on ImageNet)"
CONVNEXT = "facebookresearch/ConvNeXt README.md (Results and Pre-trained Models)"
BIT_README = "google-research/big_transfer README.md (ImageNet results; 480 px per its bit_hyperrule.py)"
BIT_T2 = "Kolesnikov et al. 2020 (BiT), Table 2"
RESNET = "KaimingHe/deep-residual-networks README.md (Results; the paper's models)"
BEIT = "microsoft/unilm beit/README.md (Fine-tuning on ImageNet-1k)"
EVA02 = "baaivision/EVA EVA-02/asuka/README.md (IN-1K fine-tuned EVA-02 tables)"
PYCLS = "facebookresearch/pycls MODEL_ZOO.md (RegNetY-16GF; Radosavovic et al. 2020's repository)"
NOISY = "google-research/noisystudent README.md (Xie et al. 2020; also the paper's abstract)"

NOT_OPENED = ("not opened from this workspace; issue 19's review opened the paper and found this value")
SHIPPED_NOT = "the authors' checkpoint; timm does not ship these weights"

# Registry name -> its published entries (paper or repository), in the order `--weights paper` prefers them
# at a resolution. The number a table shows by default is timm's evaluation of the checkpoint
# timm.create_model(<arch>, pretrained=True) loads (zoo.models.accuracy.pick): see weight_order there.
CARDS: dict[str, list[AccuracyEntry]] = {
    # AugReg's Table 3 values for Ti/16 and S/16 at 224 (73.75, 80.46) could not be opened anywhere: dropped.
    "vit_ti16": [
        _r(78.22, None, 384, "in21k", AUGREG_README, "vit_tiny_patch16_384.augreg_in21k_ft_in1k",
           note="README: Ti_16-i21k-300ep-...-res_384, the checkpoint timm converted"),
    ],
    "vit_s16": [
        _r(83.73, None, 384, "in21k", AUGREG_README, "vit_small_patch16_384.augreg_in21k_ft_in1k",
           note="README: S_16-i21k-300ep-...-res_384, the checkpoint timm converted"),
    ],
    "vit_b8": [
        _r(85.58, None, 224, "in21k", AUGREG_NB, note="0.85578 for B_8-i21k-300ep-...aug_medium2...lr_0.03-res_224, "
           "not the aug_medium1/lr_0.01 fine-tune timm converted"),
    ],
    "vit_b16": [
        _r(81.2, None, 224, "in21k", VIT_README, "vit_base_patch16_224.orig_in21k_ft_in1k",
           note="'expected to achieve 81.2%' for ViT-B/16 fine-tuned at 224 (not a number of the paper)"),
        _p(83.97, None, 384, "in21k", VIT_T5, "vit_base_patch16_384.orig_in21k_ft_in1k", note=NOT_OPENED),
        _r(85.49, None, 384, "in21k", AUGREG_README, note="AugReg B/16 ...aug_medium1...lr_0.03-res_384; timm's "
           "augreg_in21k_ft_in1k is the lr_0.01 fine-tune"),
    ],
    "vit_b32": [
        _p(81.28, None, 384, "in21k", VIT_T5, note=f"{NOT_OPENED}; {SHIPPED_NOT}"),
        _r(83.59, None, 384, "in21k", AUGREG_README, note="AugReg B/32 ...lr_0.01-res_384; timm's "
           "augreg_in21k_ft_in1k is the lr_0.03 fine-tune"),
    ],
    "vit_l16": [
        _r(82.7, None, 224, "in21k", VIT_README, note="'expected to achieve 82.7%' for ViT-L/16 at 224"),
        _p(85.15, None, 384, "in21k", VIT_T5, note=f"{NOT_OPENED}; {SHIPPED_NOT}"),
        _r(85.59, None, 384, "in21k", AUGREG_README, note="AugReg L/16 ...aug_strong1...; timm's "
           "augreg_in21k_ft_in1k is an aug_medium1 run"),
    ],
    "vit_l32": [
        _p(80.99, None, 384, "in21k", VIT_T5, "vit_large_patch32_384.orig_in21k_ft_in1k", note=NOT_OPENED),
    ],
    "vit_h14": [
        _p(88.55, None, 518, "jft300m", VIT_T2, note=f"{NOT_OPENED}; 518 px fine-tuning with Polyak averaging; "
           f"{SHIPPED_NOT}"),
    ],
    # The paper's hybrid is JFT-300M pre-trained; timm's vit_base_r50_s16_384 weights are ImageNet-21k ones.
    "vit_r50_b16": [
        _p(85.58, None, 384, "jft300m", VIT_T6, note=f"{NOT_OPENED}; R50x1+ViT-B/16 hybrid; {SHIPPED_NOT}"),
    ],
    # DeiT: ImageNet-1k only; distilled models use a RegNetY-16GF (ImageNet-1k) teacher. The README's models
    # are the repository's released checkpoints (for some a re-run: issue 19 notes the paper's 79.8 for DeiT-S).
    "deit_ti": [_r(72.2, 91.1, 224, "in1k", DEIT, "deit_tiny_patch16_224.fb_in1k")],
    "deit_s": [_r(79.9, 95.0, 224, "in1k", DEIT, "deit_small_patch16_224.fb_in1k")],
    "deit_b": [
        _r(81.8, 95.6, 224, "in1k", DEIT, "deit_base_patch16_224.fb_in1k"),
        _r(82.9, 96.2, 384, "in1k", DEIT, "deit_base_patch16_384.fb_in1k"),
    ],
    "deit_ti_distilled": [_r(74.5, 91.9, 224, "in1k", DEIT, "deit_tiny_distilled_patch16_224.fb_in1k")],
    "deit_s_distilled": [_r(81.2, 95.4, 224, "in1k", DEIT, "deit_small_distilled_patch16_224.fb_in1k")],
    "deit_b_distilled": [
        _r(83.4, 96.5, 224, "in1k", DEIT, "deit_base_distilled_patch16_224.fb_in1k"),
        _r(85.2, 97.2, 384, "in1k", DEIT, "deit_base_distilled_patch16_384.fb_in1k", note="1000 epochs"),
    ],
    "swin_t": [_r(81.2, 95.5, 224, "in1k", SWIN, "swin_tiny_patch4_window7_224.ms_in1k")],
    "swin_s": [_r(83.2, 96.2, 224, "in1k", SWIN, "swin_small_patch4_window7_224.ms_in1k")],
    "swin_b": [
        _r(83.5, 96.5, 224, "in1k", SWIN, "swin_base_patch4_window7_224.ms_in1k"),
        _r(84.5, 97.0, 384, "in1k", SWIN, "swin_base_patch4_window12_384.ms_in1k", note="window 12"),
        _r(85.2, 97.5, 224, "in21k", SWIN, "swin_base_patch4_window7_224.ms_in22k_ft_in1k"),
        _r(86.4, 98.0, 384, "in21k", SWIN, "swin_base_patch4_window12_384.ms_in22k_ft_in1k", note="window 12"),
    ],
    "swin_l": [
        _r(86.3, 97.9, 224, "in21k", SWIN, "swin_large_patch4_window7_224.ms_in22k_ft_in1k"),
        _r(87.3, 98.2, 384, "in21k", SWIN, "swin_large_patch4_window12_384.ms_in22k_ft_in1k", note="window 12"),
    ],
    "convnext_t": [
        _r(82.1, None, 224, "in1k", CONVNEXT, "convnext_tiny.fb_in1k"),
        _r(82.9, None, 224, "in21k", CONVNEXT, "convnext_tiny.fb_in22k_ft_in1k"),
        _r(84.1, None, 384, "in21k", CONVNEXT, "convnext_tiny.fb_in22k_ft_in1k_384"),
    ],
    "convnext_s": [
        _r(83.1, None, 224, "in1k", CONVNEXT, "convnext_small.fb_in1k"),
        _r(84.6, None, 224, "in21k", CONVNEXT, "convnext_small.fb_in22k_ft_in1k"),
        _r(85.8, None, 384, "in21k", CONVNEXT, "convnext_small.fb_in22k_ft_in1k_384"),
    ],
    "convnext_b": [
        _r(83.8, None, 224, "in1k", CONVNEXT, "convnext_base.fb_in1k"),
        _r(85.1, None, 384, "in1k", CONVNEXT, note=f"convnext_base_1k_384.pth; {SHIPPED_NOT}"),
        _r(85.8, None, 224, "in21k", CONVNEXT, "convnext_base.fb_in22k_ft_in1k"),
        _r(86.8, None, 384, "in21k", CONVNEXT, "convnext_base.fb_in22k_ft_in1k_384"),
    ],
    "convnext_l": [
        _r(84.3, None, 224, "in1k", CONVNEXT, "convnext_large.fb_in1k"),
        _r(85.5, None, 384, "in1k", CONVNEXT, note=f"convnext_large_1k_384.pth; {SHIPPED_NOT}"),
        _r(86.6, None, 224, "in21k", CONVNEXT, "convnext_large.fb_in22k_ft_in1k"),
        _r(87.5, None, 384, "in21k", CONVNEXT, "convnext_large.fb_in22k_ft_in1k_384"),
    ],
    "convnext_xl": [
        _r(87.0, None, 224, "in21k", CONVNEXT, "convnext_xlarge.fb_in22k_ft_in1k"),
        _r(87.8, None, 384, "in21k", CONVNEXT, "convnext_xlarge.fb_in22k_ft_in1k_384"),
    ],
    # BiT-M (ImageNet-21k). The README's numbers are re-runs at 480 px (its bit_hyperrule.py); timm's x1/x2
    # checkpoints are the released 448 px fine-tunes, so they match no published entry.
    "bit_r50x1": [_r(80.68, None, 480, "in21k", BIT_README, note="a re-run of BiT-M-R50x1")],
    "bit_r152x2": [_r(85.15, None, 480, "in21k", BIT_README, note="a re-run of BiT-M-R152x2 (an architecture "
                      "added after the paper)")],
    "bit_r152x4": [_p(85.39, None, 480, "in21k", BIT_T2, note=f"{NOT_OPENED}; BiT-M (the JFT-300M BiT-L is a "
                      "different model with no public weights); whether timm's goog_in21k_ft_in1k is this "
                      "exact checkpoint is not stated")],
    # The original (Caffe) models; numbers are top-1 errors 24.7% (1-crop) and 22.9% (10-crop) in the
    # README, "the same as those in the paper" for 10-crop. timm has no copy of these weights.
    "resnet50": [
        _r(75.3, 92.2, 224, "in1k", RESNET, note=f"1-crop: centre 224 crop of the image resized to 256; {SHIPPED_NOT}"),
        _r(77.1, 93.3, 224, "in1k", RESNET, crops="10-crop", note="10 crops of 224 from the image resized to 256"),
    ],
    # BEiT-base: masked image modelling on ImageNet-22k, intermediate supervised ImageNet-22k fine-tuning
    # (the weights timm ships), then ImageNet-1k.
    "beit_b16": [
        _r(85.2, 97.6, 224, "in21k-selfsup", BEIT, "beit_base_patch16_224.in22k_ft_in22k_in1k"),
        _r(86.8, 98.1, 384, "in21k-selfsup", BEIT, "beit_base_patch16_384.in22k_ft_in22k_in1k"),
        _r(83.7, 96.6, 224, "in21k-selfsup", BEIT, note="pt22k then ImageNet-1k directly (no intermediate "
           f"ImageNet-22k fine-tuning); {SHIPPED_NOT}"),
    ],
    # EVA-02-B/14: MIM on ImageNet-21k (with an EVA-CLIP teacher), then ImageNet-1k.
    "eva02_b14": [
        _r(88.3, None, 448, "in21k-selfsup", EVA02, "eva02_base_patch14_448.mim_in22k_ft_in1k"),
        _r(88.6, None, 448, "in21k-selfsup", EVA02, "eva02_base_patch14_448.mim_in22k_ft_in22k_in1k",
           real=90.8, imagenet_v2=79.8, imagenet_a=78.1, imagenet_r=76.8, sketch=57.7,
           note="with ImageNet-21k intermediate fine-tuning; variants from the README's summary table"),
    ],
    "regnety_160": [
        _r(80.4, None, 224, "in1k", PYCLS, "regnety_160.pycls_in1k", note="top-1 error 19.6%, 100 epochs, "
           "mean of 5 runs; DeiT's teacher is timm's regnety_160.deit_in1k"),
    ],
    "effnet_l2": [
        _r(88.4, None, 800, "jft300m-unlabelled", NOISY, "tf_efficientnet_l2.ns_jft_in1k",
           note="the README gives no resolution: 800 is that of the released checkpoint (timm's pretrained cfg)"),
    ],
}

# Registry name -> the timm architectures whose released weights it stands for, its own (spec.timm_name)
# first. Explicit rather than matched by prefix: vit_base_patch16_224_miil or convnext_tiny_hnf are other
# models. Which of their tags a row shows is zoo.models.accuracy.pick's policy, from timm's own order.
TIMM_ARCHS: dict[str, tuple[str, ...]] = {
    "vit_ti16": ("vit_tiny_patch16_224", "vit_tiny_patch16_384"),
    "vit_s16": ("vit_small_patch16_224", "vit_small_patch16_384"),
    "vit_b8": ("vit_base_patch8_224",),
    "vit_b16": ("vit_base_patch16_224", "vit_base_patch16_384"),
    "vit_b32": ("vit_base_patch32_224", "vit_base_patch32_384"),
    "vit_l16": ("vit_large_patch16_224", "vit_large_patch16_384"),
    "vit_l32": ("vit_large_patch32_224", "vit_large_patch32_384"),
    "vit_h14": ("vit_huge_patch14_224",),
    "vit_r50_b16": ("vit_base_r50_s16_224", "vit_base_r50_s16_384"),
    "deit_ti": ("deit_tiny_patch16_224",),
    "deit_s": ("deit_small_patch16_224",),
    "deit_b": ("deit_base_patch16_224", "deit_base_patch16_384"),
    "deit_ti_distilled": ("deit_tiny_distilled_patch16_224",),
    "deit_s_distilled": ("deit_small_distilled_patch16_224",),
    "deit_b_distilled": ("deit_base_distilled_patch16_224", "deit_base_distilled_patch16_384"),
    "swin_t": ("swin_tiny_patch4_window7_224",),
    "swin_s": ("swin_small_patch4_window7_224",),
    "swin_b": ("swin_base_patch4_window7_224", "swin_base_patch4_window12_384"),
    "swin_l": ("swin_large_patch4_window7_224", "swin_large_patch4_window12_384"),
    "convnext_t": ("convnext_tiny",),
    "convnext_s": ("convnext_small",),
    "convnext_b": ("convnext_base",),
    "convnext_l": ("convnext_large",),
    "convnext_xl": ("convnext_xlarge",),
    "bit_r50x1": ("resnetv2_50x1_bit",),
    "bit_r101x1": ("resnetv2_101x1_bit",),
    "bit_r152x2": ("resnetv2_152x2_bit",),
    "bit_r152x4": ("resnetv2_152x4_bit",),
    "resnet50": ("resnet50",),
    "beit_b16": ("beit_base_patch16_224", "beit_base_patch16_384"),
    "eva02_b14": ("eva02_base_patch14_448",),
    "regnety_160": ("regnety_160",),
    "effnet_l2": ("tf_efficientnet_l2",),
    # ViTDet: the SAM ViT encoders share its blocks; their weights are SAM's (SA-1B), with no ImageNet evaluation
    "vitdet_b16": ("samvit_base_patch16",), "vitdet_l16": ("samvit_large_patch16",),
    "vitdet_h16": ("samvit_huge_patch16",),
}
