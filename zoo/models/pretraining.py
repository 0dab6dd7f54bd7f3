"""The pretraining groups, defined once: the vocabulary, the rules that label a timm checkpoint from its tag
(or timm's metadata), and the teachers whose own pretraining a distilled checkpoint inherits.

Pareto fronts, --pretraining filters and the worked questions group by these words. A checkpoint's group is
that of the weights timm loads (zoo.models.accuracy), never that of a card entry whose weights cannot be
downloaded. benchmarks/make_timm_results.py labels the packaged table with label(); data/README.md states the rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PRETRAINING: dict[str, str] = {
    "in1k": "ImageNet-1k images only, for the weights and for every teacher they learned from (distillation "
            "targets, tokenizers); self-supervised on those images included",
    "in21k": "supervised on ImageNet-21k (= ImageNet-22k, one dataset under two names) or on ImageNet-12k "
             "(timm's 11,821-class subset of it: tags in12k), then ImageNet-1k; or distilled from a teacher "
             "that was (a student takes its teacher's group when its own data is ImageNet-1k)",
    "in21k-selfsup": "self-supervised (masked image modelling) on ImageNet-21k, sometimes then supervised on it, "
                     "then ImageNet-1k (BEiT, EVA-02)",
    "jft300m": "supervised on Google's JFT-300M (not public), then ImageNet-1k",
    "jft300m-unlabelled": "Noisy Student: ImageNet-1k labels plus pseudo-labelled, unlabelled JFT-300M images",
    "image-text": "contrastive image-text pre-training (CLIP/SigLIP on LAION-2B, OpenAI WIT, WebLI, ...), "
                  "then ImageNet-1k; or ImageNet-1k training toward a CLIP teacher (BEiT v2's tokenizer)",
    "web-weak": "weakly or semi-supervised web images (Instagram hashtags, SWAG, YFCC100M), then ImageNet-1k",
    "other": "anything else (e.g. masked image modelling on merged multi-dataset collections)",
}

# timm's model_metadata-in1k.csv vocabulary -> ours. in1k-dist names a student, whose group its teacher decides
# (TEACHERS); a student missing there keeps in1k, and tests/test_accuracy.py lists which ones those are.
METADATA_VOCAB = {"in1k": "in1k", "in1k-dist": "in1k", "in1k-ap": "in1k", "in1k-adv": "in1k", "in21k": "in21k",
                  "in21k-selfsl": "in21k-selfsup", "jft300m-ns": "jft300m-unlabelled", "ig1b-wsl": "web-weak",
                  "ig1b-swsl": "web-weak", "yfc-semisl": "web-weak"}

# The weight tag (and for BEiT the architecture) -> group, first match wins.
TAG_RULES = [
    ("image-text", r"clip|laion|openai|webli|siglip|dfn|metaclip|datacomp|merged2b"),
    ("jft300m-unlabelled", r"ns_jft"),
    ("jft300m", r"jft"),
    ("web-weak", r"swag|ig1b|ig3b|swsl|wsl|yfcc"),
    ("other", r"m38m|m30m|lvd\d|^beit3"),          # merged collections; BEiT-3 is multimodal
    # Masked image modelling is grouped by the data it ran on, then by any later supervised stage (the BEiT v2
    # rule). The MIM data is the first data word of a BEiT or EVA(-01) tag, or the word right after mim/mae/fcmae.
    # No data word there: the MIM ran on ImageNet-1k, and a later in22k stage makes it in21k below (BEiT v2
    # in1k_ft_in22k_in1k; ConvNeXt-V2 fcmae_ft_in22k_in1k: FCMAE on ImageNet-1k, the ConvNeXt-V2 README's only
    # FCMAE weights, then supervised ImageNet-22k).
    ("in21k-selfsup", r"^(beit|eva_)[^.]*\.in2[12]k|\.(.*_)?(mim|mae|fcmae)_in2[12]k"),
    ("in21k", r"in21k|in22k|in12k"),
    ("in1k", r"in1k"),
]


@dataclass(frozen=True)
class Teacher:
    """A model whose outputs a checkpoint was trained toward (logit distillation, or a tokenizer's targets)."""
    name: str
    pretraining: str          # the teacher's own group
    citation: str

    def text(self) -> str:
        return f"teacher {self.name}, {self.pretraining}"


BIT_DISTILL = Teacher("BiT-M-R152x2", "in21k", "google-research/big_transfer README.md, 'Distilled models': "
                      "'we distill the BiT-M-R152x2 model (which was pre-trained on ImageNet-21k) to BiT-R50x1'")
DEIT_TEACHER = Teacher("RegNetY-16GF", "in1k", "Touvron et al. 2021 (DeiT), Sec. 5: the default teacher, a "
                       "RegNetY-16GF trained on ImageNet-1k (timm's regnety_160.deit_in1k); not re-opened here")
BEITV2_TOKENIZER = Teacher("CLIP ViT-B/16 (BEiT v2's VQ-KD tokenizer)", "image-text",
                           "microsoft/unilm beit2/TOKENIZER.md: the released tokenizer "
                           "vqkd_encoder_base_decoder_3x768x12_clip, teacher model CLIP ViT-B/16")
# timm tag pattern -> its teacher. A student whose own data is ImageNet-1k takes its teacher's group; one whose
# own data already puts it in a wider group keeps that (BEiT v2 in1k_ft_in22k_in1k stays in21k).
TEACHERS: list[tuple[str, Teacher]] = [
    (r"^resnetv2_50x1_bit\.goog_distilled_in1k$", BIT_DISTILL),
    (r"^deit_[a-z]+_distilled_patch16_\d+\.fb_in1k$", DEIT_TEACHER),
    (r"^beitv2_[a-z]+_patch16_224\.in1k_ft_", BEITV2_TOKENIZER),
]


def tag_pretraining(model_tag: str) -> str:
    return next((group for group, pattern in TAG_RULES if re.search(pattern, model_tag)), "other")


def teacher_of(model_tag: str | None) -> Teacher | None:
    return next((t for pattern, t in TEACHERS if model_tag and re.search(pattern, model_tag)), None)


def label(model_tag: str, metadata: str | None = None) -> tuple[str, str]:
    """(group, where it came from: 'metadata', 'tag' or 'teacher') for a timm `arch.tag`, given timm's
    model_metadata label if it names these weights. A teacher outside in1k moves an in1k student to its group."""
    own, source = (METADATA_VOCAB[metadata], "metadata") if metadata in METADATA_VOCAB else \
        (tag_pretraining(model_tag), "tag")
    teacher = teacher_of(model_tag)
    if teacher is not None and own == "in1k" and teacher.pretraining != "in1k":
        return teacher.pretraining, "teacher"
    return own, source


def weights_text(short: str, model_tag: str | None) -> str:
    """A checkpoint's short tag, with its teacher where the teacher decided its group."""
    teacher = teacher_of(model_tag)
    return f"{short} ({teacher.text()})" if teacher and teacher.pretraining != "in1k" else short
