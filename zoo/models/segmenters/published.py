"""The published ADE20K tables of UperNet on Swin and ConvNeXt, every row, with where each was published.

Params in millions and "FLOPs" in G as mmcv's get_flops counts them (mmseg tools/get_flops.py): its "FLOPs"
are multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling elements; functional
ops (Swin's attention QK^T and AV, F.interpolate) are not seen, and it runs `forward_dummy` (backbone + decode
head: no auxiliary head), while its params count every module (the auxiliary head's too). Neither README
says at what input size its FLOPs were counted: 512 x 2048 (H x W) for the 512-crop rows is the size at which
the count reproduces them (tests/test_segmenters.py), and the size the papers are reported to use (Swin,
arXiv:2103.14030, Table 3; ConvNeXt, arXiv:2201.03545, Table 4: 2048 x 512, and 2560 x 640 for the 640-crop
rows; neither paper was opened here). mIoU: ADE20K val, single scale and multi-scale + flip ("ms+flip").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .specs import SegmenterSpec

SWIN = ("SwinTransformer/Swin-Transformer-Semantic-Segmentation@8fdda7bb1a57470f1bbc934c24cc97a60e579029 "
        "README.md, ")
CONVNEXT = "facebookresearch/ConvNeXt@089ca24854ae6197fdded25688a289ba4492d01f semantic_segmentation/README.md, "
FLOPS_SIZE = {512: (512, 2048), 640: (640, 2560)}   # crop -> (H, W) of the FLOPs count (see above)


@dataclass(frozen=True)
class PublishedRow:
    model: str                   # the zoo's backbone name
    segmenter: str
    pretraining: str             # in1k, in22k, or moby-in1k (self-supervised MoBY on ImageNet-1K)
    crop: int                    # training crop side (px)
    schedule: str                # training iterations
    miou: float                  # ADE20K val, single scale (%)
    miou_ms: float               # multi-scale + flip (%)
    params_m: float              # millions, as published (rounded to 1M)
    gflops: float                # G, mmcv's count (multiply-accumulates), at flops_size
    source: str                  # repository@commit file, table and row

    @property
    def flops_size(self) -> tuple[int, int]:
        return FLOPS_SIZE[self.crop]

    def row_fields(self) -> dict:
        """What a cost row of the same (backbone, segmenter, schedule, pretraining, crop) carries."""
        return {"miou": self.miou, "miou_ms": self.miou_ms,
                "seg_published": {**asdict(self), "flops_size": list(self.flops_size),
                                  "flops_convention": "mmcv get_flops: MACs of conv/linear modules (+ bias, norm, "
                                                      "activation, pooling elements), forward_dummy without the "
                                                      "auxiliary head; input size not stated in the README"}}


def _row(model, pretraining, crop, miou, miou_ms, params_m, gflops, where) -> PublishedRow:
    return PublishedRow(model, "upernet", pretraining, crop, "160k", miou, miou_ms, params_m, gflops, where)


ADE20K = (
    _row("swin_t", "in1k", 512, 44.51, 45.81, 60, 945, SWIN + "Results and Models, ADE20K, Swin-T UPerNet row"),
    _row("swin_s", "in1k", 512, 47.64, 49.47, 81, 1038, SWIN + "Results and Models, ADE20K, Swin-S UperNet row"),
    _row("swin_b", "in1k", 512, 48.13, 49.72, 121, 1188, SWIN + "Results and Models, ADE20K, Swin-B UperNet row"),
    _row("swin_t", "moby-in1k", 512, 44.06, 45.58, 60, 945,
         SWIN + "Results of MoBY with Swin Transformer, ADE20K, Swin-T UPerNet row"),
    _row("convnext_t", "in1k", 512, 46.0, 46.7, 60, 939, CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-T row"),
    _row("convnext_s", "in1k", 512, 48.7, 49.6, 82, 1027, CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-S row"),
    _row("convnext_b", "in1k", 512, 49.1, 49.9, 122, 1170,
         CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-B ImageNet-1K row"),
    _row("convnext_b", "in22k", 640, 52.6, 53.1, 122, 1828,
         CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-B ImageNet-22K row"),
    _row("convnext_l", "in22k", 640, 53.2, 53.7, 235, 2458, CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-L row"),
    _row("convnext_xl", "in22k", 640, 53.6, 54.0, 391, 3335,
         CONVNEXT + "Results and Fine-tuned Models, ConvNeXt-XL row"),
)


def published_for(model: str, spec: SegmenterSpec) -> PublishedRow | None:
    """The published row of exactly this recipe (backbone, segmenter, schedule, pretraining, crop), or None:
    a row of another recipe (ConvNeXt-B's ImageNet-22K 640 crop, Swin-T's MoBY pretraining) is never matched."""
    found = [r for r in ADE20K if (r.model, r.segmenter, r.schedule, r.pretraining, r.crop)
             == (model, spec.name, spec.schedule, spec.pretraining, spec.crop)]
    if len(found) > 1:
        raise ValueError(f"two published rows for one recipe: {found}")
    return found[0] if found else None


def published_cells(record: dict) -> dict:
    """A segmenter record's published figures for display: params, GFLOPs with the size they were counted at,
    and our inference GMACs / theirs where the record is at that size (else None: not comparable)."""
    stored = record.get("seg_published")
    # the figures come from the shipped table, the stored row only names which entry (a results file is not
    # trusted to hold them: a damaged or hand-edited entry shows no published figures rather than a crash)
    row = next((p for p in ADE20K if isinstance(stored, dict) and p.source == stored.get("source")), None)
    if row is None:
        return {}
    h, w = row.flops_size
    same_size = (record.get("img_h"), record.get("img_w")) == (h, w)
    params, macs = record.get("params"), record.get("macs")
    return {"published_params_m": row.params_m, "published_gflops": f"{row.gflops} at {h}x{w}",
            "params_vs_published": params / 1e6 / row.params_m if isinstance(params, int) and params else None,
            "gmacs_vs_published": macs / 1e9 / row.gflops if same_size and isinstance(macs, int) and macs else None}
