"""Accuracy next to cost: each model's published entries (cards) and timm's evaluations (packaged table),
the one entry a table row at a resolution shows, and Pareto fronts per pretraining group.
"""
from __future__ import annotations

import csv
import functools
import io
from importlib import resources
from typing import Iterable

from ..errors import UnknownModelError
from .cards import CARDS, PRETRAINING, TIMM_WEIGHTS, AccuracyEntry
from .registry import TIMM_PREFIX, get_spec

TIMM_CITATION = "timm results/results-imagenet.csv (+ -real, -imagenetv2-matched-frequency, -sketch, -imagenet-r, " \
                "-imagenet-a), huggingface/pytorch-image-models aa4b585"
_FLOATS = ("top1", "top5", "real", "imagenet_v2", "sketch", "imagenet_r", "imagenet_a", "param_count", "crop_pct")


@functools.lru_cache(maxsize=1)
def timm_table() -> tuple[dict, ...]:
    """The packaged zoo/models/data/timm_results.csv, typed (empty cells -> None); see data/README.md."""
    text = resources.files("zoo.models").joinpath("data", "timm_results.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        typed = {k: (float(v) if v else None) if k in _FLOATS else v for k, v in row.items()}
        typed["img_size"] = int(row["img_size"])
        typed["arch"], _, typed["tag"] = row["model_tag"].partition(".")
        rows.append(typed)
    return tuple(rows)


def _timm_entry(row: dict) -> AccuracyEntry:
    return AccuracyEntry(top1=row["top1"], top5=row["top5"], img_size=row["img_size"], pretraining=row["pretraining"],
                         crops="single", source="timm", citation=TIMM_CITATION, weights=row["model_tag"],
                         real=row["real"], imagenet_v2=row["imagenet_v2"], sketch=row["sketch"],
                         imagenet_r=row["imagenet_r"], imagenet_a=row["imagenet_a"], crop_pct=row["crop_pct"],
                         note=f"timm's evaluation; pretraining from timm's {row['pretraining_from']}")


def timm_weights(model: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(timm architectures, weight tags the model stands for, in order) for a registry or timm:<name> model.

    timm:<arch.tag> stands for that tag only; timm:<arch> for timm's default tag (local metadata)."""
    if not model.startswith(TIMM_PREFIX):
        get_spec(model)  # unknown names raise UnknownModelError
        return TIMM_WEIGHTS.get(model, ((), ()))
    arch, _, tag = get_spec(model).timm_name.partition(".")
    if not tag:
        import timm

        cfg = timm.models.get_pretrained_cfg(arch)
        tag = getattr(cfg, "tag", None) or ""
    return (arch,), ((tag,) if tag else ())


def _entries(model: str) -> list[AccuracyEntry]:
    archs, tags = timm_weights(model)
    only_tag = model.startswith(TIMM_PREFIX) and "." in model
    order = {a: i for i, a in enumerate(archs)}
    rank = {t: i for i, t in enumerate(tags)}
    rows = [r for r in timm_table() if r["arch"] in order and (not only_tag or r["tag"] == tags[0])]
    rows.sort(key=lambda r: (rank.get(r["tag"], len(rank)), r["tag"], order[r["arch"]], r["img_size"]))
    return list(CARDS.get(model, [])) + [_timm_entry(r) for r in rows]


def accuracy_entries(model: str) -> list[dict]:
    """Every accuracy known for `model`: its card's paper entries (in card order), then timm's evaluations of
    every tag of its timm architectures (the weights it stands for first). Raises UnknownModelError."""
    return [{"model": model, **e.as_dict()} for e in _entries(model)]


def _primary_pretraining(model: str, entries: list[AccuracyEntry]) -> str | None:
    """The first card entry's group, else that of the first tag the model stands for that timm evaluated."""
    paper = [e for e in entries if e.source == "paper"]
    if paper:
        return paper[0].pretraining
    tags = timm_weights(model)[1]
    evaluated = {e.weights.partition(".")[2]: e.pretraining for e in entries if e.source == "timm"}
    return next((evaluated[t] for t in tags if t in evaluated), None)


def top1_at(model: str, img_size: int, pretraining: Iterable[str] | None = None) -> dict | None:
    """THE entry a table row of `model` at `img_size` shows, or None: never one of another resolution.

    Single-crop entries at exactly img_size, for the weights the model stands for: its card's entries in card
    order, else timm's evaluation of its TIMM_WEIGHTS tags in order (timm:<name>: its tag). Other weights of
    the same architecture stay in accuracy_entries only. `pretraining` keeps only entries of those groups.
    The result carries `timm_eval`: timm's evaluation of the same weights at this size (ImageNetV2,
    Sketch, ...), when the chosen entry is a paper one whose weights timm evaluated there.
    """
    allowed = None if pretraining is None else set(pretraining)
    try:
        tags, entries = timm_weights(model)[1], _entries(model)
    except UnknownModelError:  # a stored row of a model since renamed or removed: no accuracy, not a crash
        return None
    here = [e for e in entries if e.img_size == img_size and e.crops == "single"]
    shown = [e for e in here if allowed is None or e.pretraining in allowed]
    paper = [e for e in shown if e.source == "paper"]
    evaluated = sorted((e for e in shown if e.source == "timm" and e.weights.partition(".")[2] in tags),
                       key=lambda e: tags.index(e.weights.partition(".")[2]))
    if not paper + evaluated:
        return None
    chosen = (paper + evaluated)[0]
    same = next((e for e in here if chosen.source == "paper" and e.source == "timm" and e.weights == chosen.weights),
                None)
    return {"model": model, **chosen.as_dict(), "timm_eval": same.as_dict() if same else None}


def pretraining_of(model: str, img_size: int | None = None) -> str | None:
    """The group of top1_at(model, img_size) when there is one, else of the weights the model stands for."""
    if img_size is not None:
        found = top1_at(model, img_size)
        if found:
            return found["pretraining"]
    return _primary_pretraining(model, _entries(model))


def pareto_front(points: list[dict], x_key: str, y_key: str = "top1", lower_x_is_better: bool = True) -> set[int]:
    """Indices of the points no other point of the same group beats: x at least as good and y at least as
    high, one of them strictly. Groups are (point["pretraining"], point.get("crops", "single")): a multi-crop
    entry never joins a single-crop front. Points lacking x or y are on no front."""
    sign = 1 if lower_x_is_better else -1
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(points):
        if p.get(x_key) is not None and p.get(y_key) is not None:
            groups.setdefault((p.get("pretraining"), p.get("crops", "single")), []).append(i)
    front = set()
    for members in groups.values():
        for i in members:
            xi, yi = sign * points[i][x_key], points[i][y_key]
            if not any(sign * points[j][x_key] <= xi and points[j][y_key] >= yi
                       and (sign * points[j][x_key] < xi or points[j][y_key] > yi) for j in members if j != i):
                front.add(i)
    return front


__all__ = ["PRETRAINING", "AccuracyEntry", "accuracy_entries", "top1_at", "pretraining_of", "pareto_front",
           "timm_table", "timm_weights"]
