"""The published ADE20K tables (package data zoo/models/data/ade20k_segmentation.csv, each row with its
repository, commit, file and line; see data/README.md), and the row a segmenter's cost row shows.

Params in millions and "FLOPs" in G as mmcv's get_flops counts them (mmseg tools/get_flops.py): its "FLOPs"
are multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling elements; functional
ops (Swin's attention QK^T and AV, F.interpolate) are not seen, and it runs `forward_dummy` (backbone + decode
head: no auxiliary head), while its params count every module (the auxiliary head's too). Only the Swin and
ConvNeXt READMEs publish them, without the input size: crop x 4 crop (512 x 2048, 640 x 2560: the test scale
of mmseg's ADE20K pipelines, img_scale (2048, 512) and (2560, 640) with keep_ratio) is where the count
reproduces them (tests/test_segmenters.py). mIoU: ADE20K val, single scale and multi-scale + flip ("ms+flip").

A cost row is matched on (backbone, segmenter heads) and, among the recipes published for them (pretraining,
crop, schedule, source), the one `--pretraining` / `--weights` pick (`published_row`): the published row's
recipe is named beside its mIoU, the heads never across (`segmenter` values other than a SEGMENTERS name, such
as mmseg's ViT "LN + MLN" or DeiT rows without a neck, are heads archzoo does not build and never match).
"""
from __future__ import annotations

import csv
import functools
import io
from dataclasses import asdict, dataclass, fields
from importlib import resources

MMSEG = "open-mmlab/mmsegmentation"
FLOPS_CONVENTION = ("mmcv get_flops: MACs of conv/linear modules (+ bias, norm, activation, pooling elements), "
                    "forward_dummy without the auxiliary head; input size not stated in the README")


@dataclass(frozen=True)
class PublishedRow:
    model: str                   # the zoo's backbone name
    published_name: str          # as the table writes it ("ViT-B + MLN")
    segmenter: str               # the heads: a SEGMENTERS name, or one archzoo does not build
    pretraining: str             # as published, with its kind ("IN-1K MoBY self-supervised")
    pretraining_group: str       # its zoo.models.cards.PRETRAINING group
    crop: int                    # training crop side (px)
    schedule: str                # training iterations ("160k")
    miou: float                  # ADE20K val, single scale (%)
    miou_ms: float               # multi-scale + flip (%)
    params_m: int | float | None   # millions, as published (rounded to 1M); None: not published
    gflops: int | float | None     # G, mmcv's count (multiply-accumulates), at flops_size; None: not published
    test: str                    # the config's test_cfg: "whole", or "slide CROP/STRIDE"
    images_per_gpu: int          # the recipe's training batch per GPU (samples_per_gpu)
    config: str                  # the config the row links
    note: str | None             # where the recipe differs from what archzoo counts, or what was not opened
    repo: str
    commit: str
    file: str
    line: int

    @property
    def source(self) -> str:
        return f"{self.repo}@{self.commit[:7]} {self.file}:{self.line}"

    @property
    def flops_size(self) -> tuple[int, int]:
        """H x W of the published FLOPs and of the test scale: crop x 4 crop."""
        return self.crop, 4 * self.crop

    @property
    def official(self) -> bool:
        """From the backbone authors' own repository (not mmsegmentation's re-runs)."""
        return self.repo != MMSEG

    @property
    def iterations(self) -> int:
        return int(self.schedule.rstrip("k")) * 1000

    def recipe(self) -> str:
        h, w = self.flops_size
        note = f" ({self.note})" if self.note else ""
        return (f"{self.published_name} {self.segmenter} {self.schedule}, {self.crop}x{self.crop} crop, "
                f"{self.images_per_gpu} images/GPU, {self.pretraining}, tested {self.test} at {h}x{w}{note}: "
                f"{self.source}")


def _number(text: str) -> int | float:
    return int(text) if text.isdigit() else float(text)


_TYPES = {"crop": int, "miou": float, "miou_ms": float, "params_m": _number, "gflops": _number,
          "images_per_gpu": int, "line": int}


@functools.lru_cache(maxsize=1)
def ade20k_rows() -> tuple[PublishedRow, ...]:
    """Every row of the packaged table, typed (empty cells -> None), in the order of the sources."""
    text = resources.files("zoo.models").joinpath("data", "ade20k_segmentation.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        typed = {k: (_TYPES[k](v) if v else None) if k in _TYPES else (v or None) for k, v in row.items()}
        typed["model"] = typed.pop("backbone")
        rows.append(PublishedRow(**{f.name: typed[f.name] for f in fields(PublishedRow)}))
    return tuple(rows)


ADE20K = ade20k_rows()
WEIGHT_POLICIES = {"default": "the backbone authors' row before mmsegmentation's, ImageNet-1K first, supervised "
                              "first, the longest schedule", "paper": "only the backbone authors' own repository's rows",
                   "best": "the highest single-scale mIoU"}


def _size_matches(row: PublishedRow, size: tuple[int, int] | None) -> bool:
    return size is not None and tuple(size) in (row.flops_size, (row.crop, row.crop))


def published_row(model: str, segmenter: str, size: tuple[int, int] | None = None, groups: list[str] | None = None,
                  weights: str = "default") -> PublishedRow | None:
    """The published row a (backbone, segmenter) cost row at `size` (H, W) shows, or None. `groups`: PRETRAINING
    groups its pretraining must be of (--pretraining); `weights` (--weights): which of the rows left. A row whose
    crop or test scale is `size` goes first (ConvNeXt-B at 640 x 2560: its ImageNet-22K 640-crop row)."""
    rows = [r for r in ADE20K if (r.model, r.segmenter) == (model, segmenter)
            and (not groups or r.pretraining_group in groups) and (weights != "paper" or r.official)]
    if not rows:
        return None
    if weights == "best":
        return max(rows, key=lambda r: (_size_matches(r, size), r.miou))
    return max(rows, key=lambda r: (_size_matches(r, size), groups is not None or r.pretraining_group == "in1k",
                                    r.official, "self-supervised" not in r.pretraining, r.iterations))


def task_fields(model: str, segmenter: str, size: tuple[int, int] | None = None, groups: list[str] | None = None,
                weights: str = "default") -> dict:
    """Row fields: miou and miou_ms of the published row `published_row` picks (seg_published: that row, with
    seg_recipe naming it), or seg_unmatched saying which rows exist for the backbone and why none is this one's."""
    row = published_row(model, segmenter, size, groups, weights)
    others = [r for r in ADE20K if r.model == model and r is not row]
    if row is not None:
        published = {**asdict(row), "source": row.source, "flops_size": list(row.flops_size),
                     "flops_convention": FLOPS_CONVENTION,
                     "other_rows": [f"{r.published_name} {r.segmenter} {r.schedule} {r.crop} crop {r.pretraining}: "
                                    f"{r.miou} / {r.miou_ms} ({r.source})" for r in others]}
        return {"miou": row.miou, "miou_ms": row.miou_ms, "seg_published": published, "seg_recipe": row.recipe(),
                "seg_unmatched": None}
    if not others:
        why = f"no published ADE20K row for {model} in the packaged tables"
    else:
        asked = [f"{segmenter} heads"] + ([f"pretraining of {', '.join(groups)}"] if groups else []) + \
                (["the backbone authors' own repository (--weights paper)"] if weights == "paper" else [])
        listed = "; ".join(f"{r.published_name} {r.segmenter} {r.schedule}, {r.pretraining} ({r.repo})"
                           for r in others)
        why = f"not matched: this row asks for {', '.join(asked)}; published for {model}: {listed}"
    return {"miou": None, "miou_ms": None, "seg_published": None, "seg_recipe": None, "seg_unmatched": why}


def published_cells(record: dict) -> dict:
    """A segmenter record's published figures for display: params, GFLOPs with the size they were counted at,
    and our inference GMACs / theirs where the record is at that size (else None: not comparable)."""
    stored = record.get("seg_published")
    # the figures come from the shipped table, the stored row only names which entry (a results file is not
    # trusted to hold them: a damaged or hand-edited entry shows no published figures rather than a crash)
    row = next((p for p in ADE20K if isinstance(stored, dict) and p.source == stored.get("source")), None)
    if row is None or row.gflops is None:
        return {}
    h, w = row.flops_size
    same_size = (record.get("img_h"), record.get("img_w")) == (h, w)
    params, macs = record.get("params"), record.get("macs")
    return {"published_params_m": row.params_m, "published_gflops": f"{row.gflops} at {h}x{w}",
            "params_vs_published": params / 1e6 / row.params_m if isinstance(params, int) and params else None,
            "gmacs_vs_published": macs / 1e9 / row.gflops if same_size and isinstance(macs, int) and macs else None}
