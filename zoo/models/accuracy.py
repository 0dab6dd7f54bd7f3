"""Accuracy next to cost: each model's published entries (cards) and timm's evaluations (packaged table),
the checkpoint a table row at a resolution shows (checkpoint_at: one policy), and Pareto fronts per pretraining group.
"""
from __future__ import annotations

import csv
import functools
import io
from importlib import resources
from typing import Iterable

from ..errors import UnknownModelError
from .cards import CARDS, TIMM_ARCHS, AccuracyEntry
from .pretraining import PRETRAINING, teacher_of, weights_text
from .registry import TIMM_PREFIX, get_spec
from .tag_order import timm_tag_order

TIMM_CITATION = "timm results/results-imagenet.csv (+ -real, -imagenetv2-matched-frequency, -sketch, -imagenet-r, " \
                "-imagenet-a), huggingface/pytorch-image-models aa4b585"
_FLOATS = ("top1", "top5", "real", "imagenet_v2", "sketch", "imagenet_r", "imagenet_a", "param_count", "crop_pct")
# --weights: default = timm's evaluation of what timm.create_model(arch, pretrained=True) loads at that size;
# paper = the authors' checkpoint (the card entry); best = timm's most accurate evaluated checkpoint.
WEIGHT_POLICIES = ("default", "paper", "best")
SHIFTED = ("real", "imagenet_v2", "sketch", "imagenet_r", "imagenet_a")   # timm's five shifted test sets
NOT_IN_TIMM = "not in timm"


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


def _group_note(row: dict) -> str:
    if row["pretraining_from"] == "teacher":
        teacher = teacher_of(row["model_tag"])
        return f"pretraining from its {teacher.text()} ({teacher.citation})"
    return f"pretraining from timm's {row['pretraining_from']}"


def _timm_entry(row: dict) -> AccuracyEntry:
    return AccuracyEntry(top1=row["top1"], top5=row["top5"], img_size=row["img_size"], pretraining=row["pretraining"],
                         crops="single", source="timm", citation=TIMM_CITATION, weights=row["model_tag"],
                         real=row["real"], imagenet_v2=row["imagenet_v2"], sketch=row["sketch"],
                         imagenet_r=row["imagenet_r"], imagenet_a=row["imagenet_a"], crop_pct=row["crop_pct"],
                         note=f"timm's evaluation; {_group_note(row)}")


def timm_archs(model: str) -> tuple[tuple[str, ...], str | None]:
    """(timm architectures a registry or timm:<name> model stands for, the tag timm:<arch.tag> pins or None).
    Raises UnknownModelError."""
    if not model.startswith(TIMM_PREFIX):
        get_spec(model)
        return TIMM_ARCHS.get(model, ()), None
    arch, _, tag = get_spec(model).timm_name.partition(".")
    return (arch,), tag or None


def weight_order(model: str) -> list[str]:
    """Every `arch.tag` the model may show, in timm's own pretrained order over its architectures (its own
    first); tags timm evaluated but the installed timm no longer lists come after their architecture's."""
    archs, pinned = timm_archs(model)
    if pinned:
        return [f"{archs[0]}.{pinned}"]
    evaluated = {r["model_tag"] for r in timm_table() if r["arch"] in archs}
    order = []
    for arch in archs:
        tags = timm_tag_order(arch)
        order += [f"{arch}.{t}" for t in tags]
        order += sorted(w for w in evaluated if w.partition(".")[0] == arch and w.partition(".")[2] not in tags)
    return order


def _entries(model: str) -> list[AccuracyEntry]:
    rank = {w: i for i, w in enumerate(weight_order(model))}
    rows = sorted((r for r in timm_table() if r["model_tag"] in rank),
                  key=lambda r: (rank[r["model_tag"]], r["img_size"]))
    return list(CARDS.get(model, [])) + [_timm_entry(r) for r in rows]


def accuracy_entries(model: str) -> list[dict]:
    """Every accuracy known for `model`: its card's entries (paper or repository, in card order), then timm's
    evaluations of every tag of its timm architectures, in timm's pretrained order. Raises UnknownModelError."""
    return [{"model": model, **e.as_dict()} for e in _entries(model)]


def accuracy_at(model: str, img_size: int) -> list[dict]:
    """The JSON rows' `accuracy` list: every entry (card and timm) measured at exactly img_size, each with
    source, weights, pretraining, img_size, top1, top5 and the five shifted test sets. [] if none or unknown."""
    try:
        return [e.as_dict() for e in _entries(model) if e.img_size == img_size]
    except UnknownModelError:
        return []


def short_weights(weights: str | None) -> str:
    """A checkpoint's short form for tables: its timm tag ('in12k_ft_in1k'), or 'not in timm'; a teacher
    outside ImageNet-1k is named beside it ('goog_distilled_in1k (teacher BiT-M-R152x2, in21k)')."""
    return NOT_IN_TIMM if not weights else weights_text(weights.partition(".")[2] or weights, weights)


def checkpoint_at(model: str, img_size: int, weights: str = "default",
                  pretraining: Iterable[str] | None = None) -> dict | None:
    """THE entry a table row of `model` at `img_size` shows under a --weights policy, or None; never one of
    another resolution, only single-crop entries, only checkpoints of the `pretraining` groups if given.

    default: timm's evaluation of the first checkpoint in timm's pretrained order (weight_order) evaluated at
    img_size: timm's default tag when evaluated there. paper: the card's first entry at img_size, else timm's
    evaluation of a card checkpoint there. best: timm's most accurate evaluated checkpoint there. paper and
    best fall back to default (`policy` says which applied). `timm_eval`: timm's evaluation of the same
    weights at this size, for a card entry; `shipped`: timm ships the weights; `weights_short`: the tag.
    """
    if weights not in WEIGHT_POLICIES:
        raise ValueError(f"weights policy {weights!r} is not one of {', '.join(WEIGHT_POLICIES)}")
    allowed = None if pretraining is None else set(pretraining)
    try:
        entries = _entries(model)
    except UnknownModelError:  # a stored row of a model since renamed or removed: no accuracy, not a crash
        return None
    here = [e for e in entries if e.img_size == img_size and e.crops == "single"]
    shown = [e for e in here if allowed is None or e.pretraining in allowed]
    evaluated = [e for e in shown if e.source == "timm"]          # in timm's pretrained order
    chosen = None
    if weights == "paper":
        card_weights = [e.weights for e in CARDS.get(model, []) if e.weights]
        chosen = next((e for e in shown if e.source == "paper"), None) or next(
            (e for e in shown if e.source == "repository"), None) or next(
            (e for w in card_weights for e in evaluated if e.weights == w), None)
    elif weights == "best":
        chosen = max(evaluated, key=lambda e: e.top1, default=None)   # ties: the earlier in timm's order
    policy = weights if chosen is not None else "default"
    chosen = chosen or (evaluated[0] if evaluated else None)
    if chosen is None:
        return None
    same = next((e for e in here if chosen.source != "timm" and e.source == "timm" and e.weights == chosen.weights),
                None)
    return {"model": model, **chosen.as_dict(), "policy": policy, "weights_short": short_weights(chosen.weights),
            "shipped": chosen.weights is not None, "timm_eval": same.as_dict() if same else None}


def weights_label(entry: dict) -> str:
    """The checkpoint of a shown accuracy, short: its timm tag, or 'not in timm'; a card entry names its source."""
    return entry["weights_short"] + ("" if entry["source"] == "timm" else f" ({entry['source']})")


def entry_fields(entry: dict | None) -> dict:
    """The fields a row (zoo.compare's and zoo.select's alike) shows of the checkpoint_at entry it shows."""
    return {"top1": entry["top1"] if entry else None, "top1_resolution": entry["img_size"] if entry else None,
            "pretraining": entry["pretraining"] if entry else None,
            "top1_source": f"{entry['source']}: {entry['citation']}" if entry else None,
            "weights": entry["weights"] if entry else None, "weights_label": weights_label(entry) if entry else None,
            "weights_policy": entry["policy"] if entry else None}


def accuracy_fields(model: str, img_size: int | None, weights: str = "default", pretraining=None) -> dict:
    """The accuracy a record at img_size shows under the --weights policy, its checkpoint, and `accuracy`:
    every entry at that size (card and timm)."""
    entry = checkpoint_at(model, img_size, weights, pretraining) if img_size else None
    return {**entry_fields(entry), "accuracy": accuracy_at(model, img_size) if img_size else []}


def top1_at(model: str, img_size: int, pretraining: Iterable[str] | None = None,
            weights: str = "default") -> dict | None:
    """checkpoint_at with the pretraining groups first (the older signature)."""
    return checkpoint_at(model, img_size, weights, pretraining)


def pretraining_of(model: str, img_size: int | None = None, weights: str = "default",
                   pretraining: Iterable[str] | None = None) -> str | None:
    """The group of checkpoint_at(model, img_size, weights, pretraining) when there is one, else of the checkpoint
    the policy picks at any size, among checkpoints timm can load only (a card entry without timm weights
    names no group: vit_h14 has none), else None."""
    if img_size is not None:
        found = checkpoint_at(model, img_size, weights, pretraining)
        if found:
            return found["pretraining"]
    try:
        entries = [e for e in _entries(model) if pretraining is None or e.pretraining in set(pretraining)]
    except UnknownModelError:
        return None
    loadable = [e for e in entries if e.weights]     # a card entry timm cannot load names no group
    card = [e for e in loadable if e.source != "timm"]
    evaluated = [e for e in loadable if e.source == "timm"]
    first = (card if weights == "paper" else []) + evaluated + card
    return first[0].pretraining if first else None


def pretraining_groups(model: str) -> list[str]:
    """Every group some checkpoint timm can load for the model (a timm evaluation, or a card entry naming timm
    weights) belongs to, in first-seen order; a card whose weights cannot be downloaded (vit_h14's JFT-300M
    entry) names none."""
    return list(dict.fromkeys(e.pretraining for e in _entries(model) if e.weights))


def teacher_groups(model: str) -> list[str]:
    """'<tag> is <group> by its teacher <name>' for each checkpoint of the model whose group its teacher decided."""
    found = []
    for row in timm_table():
        if row["pretraining_from"] == "teacher" and row["model_tag"] in set(weight_order(model)):
            teacher = teacher_of(row["model_tag"])
            found.append(f"{short_weights(row['model_tag']).partition(' (')[0]} is {row['pretraining']} by its "
                         f"teacher {teacher.name}")
    return list(dict.fromkeys(found))


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


__all__ = ["PRETRAINING", "SHIFTED", "WEIGHT_POLICIES", "AccuracyEntry", "accuracy_at", "accuracy_entries",
           "checkpoint_at", "pareto_front", "pretraining_groups", "pretraining_of", "short_weights", "teacher_groups",
           "timm_archs",
           "timm_table", "timm_tag_order", "top1_at", "weight_order"]
