"""The worked selection questions, answered by `python -m zoo.select --answers` into results/answers.json.

Only counted constraints (cost on the meta device, published accuracy), so the answers are the same on
every machine: `zoo.report` renders the stored ones without building a model, and `zoo.report --check`
answers them again and fails when the stored ones differ.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

ANSWERS_FILE = "answers.json"
QUESTIONS = [  # (question, zoo.select options: each a Query field and the --flag of the same name)
    ("Among the registry's models: the most accurate ImageNet-1k-only backbone (its teachers included) under "
     "5 GMACs at 224 px",
     {"resolution": "224", "max_gmacs": "5", "pretraining": "in1k"}),
    ("Among the registry's models: the most robust to distribution shift (ImageNetV2 top-1) under 20 GMACs "
     "at 384 px",
     {"resolution": "384", "max_gmacs": "20", "rank": "imagenet_v2"}),
    ("Among the registry's models: what serves at batch 32 in 1 GiB (fp32 weights + activations) at 224 px, "
     "ranked by top-1",
     {"resolution": "224", "max_serve_mib": "1024", "batch_size": "32"}),
]


def command(options: dict) -> str:
    return "python -m zoo.select " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in options.items())


def answers_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / "results" / ANSWERS_FILE


def fresh_answers() -> list[dict]:
    """Each question with its command and zoo.select's answer, as JSON would hold it (counted on meta)."""
    from .shortlist import Query, select

    answered = []
    for question, options in QUESTIONS:
        result = select(Query(**options, save=False))
        answered.append({"question": question, "command": command(options), "answer": json.loads(json.dumps(result))})
    return answered


def write_answers(results_dir: str | Path) -> Path:
    """Answer every question and replace results/answers.json (atomically); returns its path."""
    path = answers_path(results_dir)
    text = json.dumps(fresh_answers(), indent=1) + "\n"     # key order kept: the fronts' order is rank order
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
        f.write(text)
    os.chmod(f.name, 0o644)
    os.replace(f.name, path)
    return path


def load_answers(results_dir: str | Path) -> list[dict] | None:
    """The stored answers, or None when results/ holds none (or an unreadable file)."""
    try:
        loaded = json.loads(answers_path(results_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, list) else None


def stale_answers(results_dir: str | Path) -> list[str]:
    """Problems: the stored answers missing, or different from answering the questions again."""
    stored = load_answers(results_dir)
    if stored is None:
        return [f"results/{ANSWERS_FILE} is missing: write it with `python -m zoo.select --answers`"]
    if stored != fresh_answers():
        return [f"results/{ANSWERS_FILE} is stale: rewrite it with `python -m zoo.select --answers`"]
    return []
