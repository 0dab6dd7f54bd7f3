"""Accuracy beside cost: every model at each size it has both a counted row and an accuracy entry for.

A top-1 is only ever shown at the resolution it was measured at, for a named checkpoint
(zoo.models.accuracy.checkpoint_at): by default timm's evaluation of the weights timm.create_model(...,
pretrained=True) loads, beside the paper's (the authors') checkpoint and the five shifted test sets.
Pareto fronts are drawn per pretraining group of the shown checkpoint, single-crop entries only: numbers
from different pretraining data or test protocols are not one race.
"""
from __future__ import annotations

from ..console.markdown import markdown_table
from ..models.accuracy import SHIFTED, checkpoint_at, pareto_front
from .rows import machine_name, main_machine
from .tables import spec_or_none

SHIFTED_HEADERS = ("ReaL %", "IN-V2 %", "Sketch %", "IN-R %", "IN-A %")     # one column each, in SHIFTED order
# What a column of each --weights policy is called: `paper` shows the authors' number, from a paper table or,
# for a re-release, their repository; the cell says which, so the column is not called "paper".
POLICY_LABEL = {"default": "default", "paper": "published", "best": "best"}


def _shifted(entry: dict | None) -> list[float | None]:
    """The five shifted test sets of the entry's checkpoint (timm's evaluation where the entry is a card's)."""
    if entry is None:
        return [None] * len(SHIFTED)
    robust = entry if entry["source"] == "timm" else entry.get("timm_eval") or entry
    return [robust.get(k) for k in SHIFTED]


def _other_policy(weights: str) -> str:
    return "default" if weights == "paper" else "paper"


def accuracy_points(cost: list[dict], throughput: list[dict], weights: str = "default",
                    pretraining=None) -> tuple[list[dict], list[str]]:
    """(points, notes): a point per (model, size) with a cost row and a checkpoint at that size under the
    `weights` policy (`top1` None where only the other column, the paper's or the default's, has one)."""
    machine = main_machine(throughput)
    speed = {(r["model"], r["img_size"]): r["imgs_per_s"] for r in throughput
             if r["batch_size"] == 1 and not r["settings"].get("train") and r["settings"]["dtype"] == "fp32"
             and machine_name(r) == machine}
    points, without = [], set()
    other_policy = _other_policy(weights)
    for r in cost:
        entry = checkpoint_at(r["model"], r["img_size"], weights, pretraining)
        other = checkpoint_at(r["model"], r["img_size"], other_policy, pretraining)
        if other is not None and other["policy"] != other_policy:
            other = None         # no paper checkpoint here: the paper column stays empty
        if entry is None and other is None:
            continue
        shown = entry or {}
        points.append({"model": r["model"], "family": r.get("family"), "img_size": r["img_size"],
                       "top1": shown.get("top1"), "pretraining": shown.get("pretraining"),
                       "crops": shown.get("crops", "single"), "source": shown.get("source"),
                       "citation": shown.get("citation"), "weights": shown.get("weights"),
                       "weights_short": shown.get("weights_short"), "shifted": _shifted(entry),
                       "other_top1": other and other["top1"],
                       "other_weights": other and f"{other['weights_short']} ({other['source']})",
                       "other_pretraining": other and other["pretraining"],
                       "other_source": other and other["source"], "other_citation": other and other["citation"],
                       "gmacs": r["macs"] / 1e9, "imgs_per_s": speed.get((r["model"], r["img_size"]))})
    shown_models = {p["model"] for p in points}
    for r in cost:
        if r["model"] not in shown_models and spec_or_none(r["model"]) is not None:
            without.add(r["model"])
    for x, lower in (("gmacs", True), ("imgs_per_s", False)):
        single = [p for p in points if p["crops"] == "single" and p[x] is not None and p["top1"] is not None]
        front = set()
        for group in {p["pretraining"] for p in single}:
            members = [p for p in single if p["pretraining"] == group]
            front |= {id(members[i]) for i in pareto_front(members, x, lower_x_is_better=lower)}
        for p in points:
            p[f"pareto_{x}"] = id(p) in front
    notes = [f"no accuracy entry at any counted resolution: {', '.join(sorted(without))}"] if without else []
    if machine:
        notes.append(f"img/s: batch 1, fp32, inference, on {machine}")
    return points, notes


def _f(value) -> str | None:
    return None if value is None else f"{value:.2f}"


def citations(points: list[dict]) -> list[str]:
    """The other column's sources, each once, in first-use order: accuracy_table's cells cite them as [n]."""
    return list(dict.fromkeys(p["other_citation"] for p in _ordered(points) if p.get("other_citation")))


def _ordered(points: list[dict]) -> list[dict]:
    return sorted(points, key=lambda p: (p["pretraining"] or p["other_pretraining"] or "", p["gmacs"], p["model"]))


def _weights_cell(point: dict, weights: str) -> str | None:
    """The shown checkpoint; under --weights paper it says whose number it is (paper, repository, or timm's
    evaluation where the authors published none at that size)."""
    if weights != "paper" or point["weights_short"] is None:
        return point["weights_short"]
    return f"{point['weights_short']} ({point['source']})"


def accuracy_table(points: list[dict], weights: str = "default") -> str:
    """One row per point; the five shifted test sets one column each; the other policy's source as
    'repository [n]', n its place in citations(points) (the footnotes under the table)."""
    this, other = POLICY_LABEL[weights], POLICY_LABEL[_other_policy(weights)]
    number = {c: i + 1 for i, c in enumerate(citations(points))}
    rows = [[p["model"], p["img_size"], f"{p['gmacs']:.2f}", _f(p["top1"]), _weights_cell(p, weights), p["pretraining"],
             *(_f(v) for v in p["shifted"]), _f(p["other_top1"]), p["other_weights"], p["other_pretraining"],
             f"{p['imgs_per_s']:.2f}" if p["imgs_per_s"] else None, "yes" if p["pareto_gmacs"] else "",
             p["other_source"] and f"{p['other_source']} [{number[p['other_citation']]}]"]
            for p in _ordered(points)]
    return markdown_table(["model", "res (px)", "GMACs / image at that res", f"top-1 % ({this})", "weights",
                           "pretraining", *(f"{h} ({this})" for h in SHIFTED_HEADERS), f"top-1 % ({other})",
                           f"weights ({other})", f"pretraining ({other})", "img/s (batch 1)",
                           "Pareto (GMACs, within its pretraining group)", f"source ({other})"], rows)
