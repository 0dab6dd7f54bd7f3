"""Regenerate timm_results.csv from timm's published result tables (a developer tool, never imported at run time).

    python benchmarks/make_timm_results.py [FOLDER_WITH_TIMM_RESULTS]   # default /work/shared/data/timm-results

Keeps every row whose architecture starts with one the registry maps to (zoo.models.cards.TIMM_ARCHS)
plus the TOP_N best rows of results-imagenet.csv, joins the robustness tables on (model.tag, img_size),
and labels each row's pretraining (zoo/models/data/README.md states the rules).
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "zoo" / "models" / "data"       # where the packaged table lives
DEFAULT_SOURCE = Path("/work/shared/data/timm-results")
TOP_N = 100
# column of ours -> timm's file (its top1 column)
ROBUSTNESS = {"real": "results-imagenet-real.csv", "imagenet_v2": "results-imagenetv2-matched-frequency.csv",
              "sketch": "results-sketch.csv", "imagenet_r": "results-imagenet-r.csv",
              "imagenet_a": "results-imagenet-a.csv"}
COLUMNS = ["model_tag", "img_size", "top1", "top5", "real", "imagenet_v2", "sketch", "imagenet_r", "imagenet_a",
           "param_count", "pretraining", "pretraining_from", "crop_pct"]
sys.path.insert(0, str(ROOT))
from zoo.models.pretraining import METADATA_VOCAB, label, tag_pretraining  # noqa: E402  (the rules: one place)


def read(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def metadata_by_tag(source: Path, evaluated: set[str]) -> dict[str, str]:
    """model.tag -> timm's pretraining label, where model_metadata's (pre-tag) name names one set of weights:
    a deprecated name timm maps to a model.tag, or an architecture with a single evaluated tag."""
    from timm.models._registry import _deprecated_models

    tags_of: dict[str, list[str]] = {}
    for model_tag in evaluated:
        tags_of.setdefault(model_tag.split(".")[0], []).append(model_tag)
    found = {}
    for row in read(source / "model_metadata-in1k.csv"):
        name, pretrain = row["model"], row["pretrain"]
        target = _deprecated_models.get(name)
        if target and "." in target:
            found[target] = pretrain
        elif len(tags_of.get(name, [])) == 1:
            found[tags_of[name][0]] = pretrain
    return found


def build(source: Path) -> list[dict]:
    from zoo.models.cards import TIMM_ARCHS

    archs = sorted({a for names in TIMM_ARCHS.values() for a in names})
    main = read(source / "results-imagenet.csv")
    best = {r["model"] for r in sorted(main, key=lambda r: -float(r["top1"]))[:TOP_N]}
    kept = [r for r in main if r["model"] in best or any(r["model"].startswith(a) for a in archs)]
    robust = {col: {(r["model"], r["img_size"]): r["top1"] for r in read(source / name)}
              for col, name in ROBUSTNESS.items()}
    metadata = metadata_by_tag(source, {r["model"] for r in main})
    rows = []
    for r in kept:
        key = (r["model"], r["img_size"])
        by_tag = tag_pretraining(r["model"])
        meta = metadata.get(r["model"])
        if meta in METADATA_VOCAB and METADATA_VOCAB[meta] != by_tag:
            print(f"note: {r['model']}: metadata says {meta}, the tag rule {by_tag}; keeping the metadata's",
                  file=sys.stderr)
        group, group_from = label(r["model"], meta)
        rows.append({"model_tag": r["model"], "img_size": r["img_size"], "top1": r["top1"], "top5": r["top5"],
                     **{col: robust[col].get(key, "") for col in ROBUSTNESS},
                     "param_count": r["param_count"].replace(",", ""),
                     "pretraining": group, "pretraining_from": group_from,
                     "crop_pct": r["crop_pct"]})
    return sorted(rows, key=lambda r: (r["model_tag"], int(r["img_size"])))


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    rows = build(source)
    out = DATA / "timm_results.csv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{out}: {len(rows)} rows, {out.stat().st_size / 1024:.0f} KB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
