"""Accuracy beside cost: every model at each size it has both a counted row and an accuracy entry for.

A top-1 is only ever shown at the resolution it was measured at (zoo.models.accuracy.top1_at), with
its pretraining data, crops and source. Pareto fronts are drawn per pretraining group, single-crop
entries only: numbers from different pretraining data or test protocols are not one race.
"""
from __future__ import annotations

from ..markdown import markdown_table
from ..models.accuracy import pareto_front, top1_at
from .rows import machine_name, main_machine
from .tables import spec_or_none


def accuracy_points(cost: list[dict], throughput: list[dict]) -> tuple[list[dict], list[str]]:
    """(points, notes): a point per (model, size) with a cost row and an entry at that size."""
    machine = main_machine(throughput)
    speed = {(r["model"], r["img_size"]): r["imgs_per_s"] for r in throughput
             if r["batch_size"] == 1 and not r["settings"].get("train") and r["settings"]["dtype"] == "fp32"
             and machine_name(r) == machine}
    points, without = [], set()
    for r in cost:
        entry = top1_at(r["model"], r["img_size"])
        if entry is None:
            continue
        points.append({"model": r["model"], "family": r.get("family"), "img_size": r["img_size"],
                       "top1": entry["top1"], "pretraining": entry["pretraining"], "crops": entry["crops"],
                       "source": entry["source"], "citation": entry["citation"], "weights": entry.get("weights"),
                       "gmacs": r["macs"] / 1e9, "imgs_per_s": speed.get((r["model"], r["img_size"]))})
    shown = {p["model"] for p in points}
    for r in cost:
        if r["model"] not in shown and spec_or_none(r["model"]) is not None:
            without.add(r["model"])
    for x, lower in (("gmacs", True), ("imgs_per_s", False)):
        single = [p for p in points if p["crops"] == "single" and p[x] is not None]
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


def accuracy_table(points: list[dict]) -> str:
    rows = [[p["model"], f"{p['top1']:.2f}", p["img_size"], p["pretraining"], p["crops"], f"{p['gmacs']:.2f}",
             f"{p['imgs_per_s']:.2f}" if p["imgs_per_s"] else None, "yes" if p["pareto_gmacs"] else "",
             f"{p['source']}: {p['citation']}"]
            for p in sorted(points, key=lambda p: (p["pretraining"], p["gmacs"]))]
    return markdown_table(["model", "top-1 %", "at res (px)", "pretraining", "crops", "GMACs / image at that res",
                           "img/s (batch 1)", "Pareto (GMACs, within its pretraining group)", "source"], rows)
