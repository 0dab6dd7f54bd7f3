"""The published COCO detection tables (package data zoo/models/data/coco_detection.csv, each row with its
repository, commit, file and line; see data/README.md) and the row a cost row of a detector shows.

Params and FLOPs were published at 1280 x 800 (mmcv's get_flops: its "FLOPs" are multiply-accumulates of
conv/linear modules plus bias, norm, activation and pooling elements; functional matmuls such as attention's
QK^T and AV are not seen). Box and mask AP are COCO val2017, measured at the recipe's test size (`eval_size`).
A cost row is matched on (backbone, detector recipe, pretraining): its heads must be the recipe's
(`detector` names them: maskrcnn/cascade_maskrcnn = the mmdetection configs of the Swin and ConvNeXt
tables, vitdet_* = detectron2's ViTDet configs), and the pretraining is the backbone's main one
(MAIN_PRETRAINING); among schedules the longest. Anything else is said in the row, never matched.
"""
from __future__ import annotations

import csv
import functools
import io
from importlib import resources

SWIN_PAPER = ("UNVERIFIED: Liu et al. 2021 (arXiv:2103.14030) Table 2(b), R50 row, not opened here; no official "
              "source that could be opened carries it (the Swin and ConvNeXt detection READMEs above have no "
              "ResNet row; mmdetection's configs/cascade_rcnn/README.md, as in Swin-Transformer-Object-Detection"
              "@c7b2011, gives memory, fps and AP, no params/FLOPs); (82M, 739G) as third-party notes on that "
              "table restate it")
PUBLISHED_SIZE = (800, 1280)   # H x W; the tables' "1280 x 800" is mmcv's (H, W) = (1280, 800), the same MACs
MAIN_PRETRAINING = {"vitdet": "IN-1K MAE self-supervised"}   # else "IN-1K supervised" (the papers' main rows)
DEFAULT_PRETRAINING = "IN-1K supervised"
def _number(text: str) -> int | float:
    return int(text) if text.isdigit() else float(text)


_NUMBERS = {"epochs": int, "box_ap": float, "mask_ap": float, "params_m": _number, "gflops": _number, "line": int}

# Backbones with no openable published whole-detector params/FLOPs, and what was searched.
NOT_PUBLISHED = {
    "vitdet": ("ViTDet-B/L/H: no published params or FLOPs could be opened. facebookresearch/detectron2@02b5c4e "
               "projects/ViTDet/README.md lists train/inference time, train memory and AP only; "
               "open-mmlab/mmdetection@f749743 projects/ViTDet/README.md AP only; the paper's tables (Li et al. "
               "2022, arXiv:2203.16527) were not openable here, so the ViTDet rows have no published params/FLOPs."),
}


@functools.lru_cache(maxsize=1)
def coco_rows() -> tuple[dict, ...]:
    """Every row of the packaged table, typed (empty cells -> None), in the order of the sources."""
    text = resources.files("zoo.models").joinpath("data", "coco_detection.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        typed = {k: (_NUMBERS[k](v) if v else None) if k in _NUMBERS else (v or None) for k, v in row.items()}
        typed["source"] = f"{row['repo']}@{row['commit'][:7]} {row['file']}:{row['line']}"
        rows.append(typed)
    return tuple(rows)


def pretraining_group(pretraining: str) -> str:
    """The zoo.models.cards.PRETRAINING group of a published label: IN-1K (supervised or self-supervised on
    it) -> in1k; IN-21K / IN-22K supervised -> in21k."""
    return "in1k" if pretraining.startswith("IN-1K") else "in21k"


def main_pretraining(backbone: str) -> str:
    return next((p for family, p in MAIN_PRETRAINING.items() if backbone.startswith(family)), DEFAULT_PRETRAINING)


def _published_params_flops() -> dict[tuple[str, str], tuple]:
    """(backbone, detector) -> (params in M, GFLOPs as mmcv counts them, source): the table's main rows."""
    found = {}
    for backbone, detector in {(r["backbone"], r["detector"]) for r in coco_rows() if r["gflops"]}:
        row = published_row(backbone, detector) or next(      # params and FLOPs do not depend on pretraining
            r for r in coco_rows() if (r["backbone"], r["detector"]) == (backbone, detector) and r["gflops"])
        found[(backbone, detector)] = (row["params_m"], row["gflops"], row["source"])
    return dict(sorted(found.items()))


def published_row(backbone: str, detector: str, groups: list[str] | None = None) -> dict | None:
    """The row a (backbone, detector) cost row shows: its main pretraining (or, with `groups`, a pretraining of
    those zoo.models.cards.PRETRAINING groups, the main one first), the longest schedule; or None."""
    rows = [r for r in coco_rows() if r["backbone"] == backbone and r["detector"] == detector
            and (pretraining_group(r["pretraining"]) in groups if groups else
                 r["pretraining"] == main_pretraining(backbone))]
    # the backbone's main pretraining first, then the longest schedule (the first such row of the table)
    return max(rows, key=lambda r: (r["pretraining"] == main_pretraining(r["backbone"]), r["epochs"])) if rows else None


def heads_named(backbone: str, detector: str) -> str:
    """The DETECTORS key `detector` as the --detector name that means it on `backbone`, with its heads: on a ViTDet
    backbone "cascade_maskrcnn" means detectron2's ViTDet heads, so mmdetection's are "mmdet_cascade_maskrcnn"."""
    from .specs import ALIASES, DETECTORS, resolve_detector

    name = detector if resolve_detector(backbone, detector) == detector else \
        next((alias for alias, key in ALIASES.items() if key == detector), detector)
    config = DETECTORS[detector].config
    return f"{name} ({config[config.index('(') + 1:-1]})" if config.endswith(")") else name


def task_fields(backbone: str, detector: str, groups: list[str] | None = None) -> dict:
    """Row fields: box_ap and mask_ap of the published row of this recipe (task_published: that row), or
    task_unmatched saying which published rows exist for the backbone and why none is this row's. `groups`:
    PRETRAINING groups the AP's pretraining must be of (zoo.compare --pretraining), else the main one."""
    from .specs import ALIASES

    detector = ALIASES.get(detector, detector)     # a row may hold the --detector name ("mmdet_maskrcnn") of a key
    row = published_row(backbone, detector, groups)
    others = [r for r in coco_rows() if r["backbone"] == backbone and r is not row]
    if row is not None:
        published = {k: row[k] for k in ("published_name", "detector", "schedule", "epochs", "pretraining",
                                         "params_m", "gflops", "flops_size", "eval_size", "config", "source")}
        published["pretraining_group"] = pretraining_group(row["pretraining"])
        published["other_rows"] = [f"{r['detector']} {r['schedule']} {r['pretraining']}: {r['box_ap']} / "
                                   f"{r['mask_ap']}" for r in others if r["detector"] == detector]
        return {"box_ap": row["box_ap"], "mask_ap": row["mask_ap"], "task_published": published,
                "task_recipe": f"{row['published_name']} {row['detector']} {row['schedule']}, {row['pretraining']}, "
                               f"tested at {row['eval_size']}: {row['source']}", "task_unmatched": None}
    if not others:
        why = f"no published COCO row for {backbone} in the packaged tables"
    else:
        listed = "; ".join(f"{r['detector']} {r['schedule']} {r['pretraining']}" for r in others)
        asked = f"pretraining of {', '.join(groups)}" if groups else f"{main_pretraining(backbone)} pretraining"
        differs = "other pretraining" if any(r["detector"] == detector for r in others) else "other heads"
        why = (f"not matched: this row counts {heads_named(backbone, detector)} with {asked}; published for "
               f"{backbone}: {listed} ({differs})")
    return {"box_ap": None, "mask_ap": None, "task_published": None, "task_recipe": None, "task_unmatched": why}


PUBLISHED = {**_published_params_flops(), ("resnet50", "cascade_maskrcnn"): (82, 739, SWIN_PAPER)}
