"""The worked selection questions, answered by `python -m zoo.select --answers` into results/answers.json.

Only counted constraints (cost on the meta device, published accuracy), so the answers are the same on
every machine: `zoo.report` renders the stored ones without building a model, and `zoo.report --check`
answers them again and fails when the stored ones differ. The file's format and strict reading:
zoo.answers.stored.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..answers.stored import ANSWERS_FILE, read_answers, write_answers_file

QUESTIONS = [  # (question, zoo.select options: each one of zoo.options.select.OPTIONS, the --flag of that name)
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


def fresh_answers() -> list[dict]:
    """Each question with its command and zoo.select's answer, as JSON would hold it (counted on meta)."""
    from .shortlist import Query, select

    answered = []
    for question, options in QUESTIONS:
        result = select(Query.of(**options, save=False))
        answered.append({"question": question, "command": command(options), "answer": json.loads(json.dumps(result))})
    return answered


def write_answers(results_dir: str | Path, answers: list[dict] | None = None) -> Path:
    """Answer every question (unless given `answers`) and replace results/answers.json atomically; returns its
    path."""
    return write_answers_file(results_dir, fresh_answers() if answers is None else answers)


def stale_answers(results_dir: str | Path) -> list[str]:
    """Problems: the stored answers missing, unusable, or different from answering the questions again."""
    stored, problem = read_answers(results_dir)
    if problem:
        return [f"{problem}: rewrite it with `python -m zoo.select --answers`"]
    if stored is None:
        return [f"results/{ANSWERS_FILE} is missing: write it with `python -m zoo.select --answers`"]
    if stored != fresh_answers():
        return [f"results/{ANSWERS_FILE} is stale: rewrite it with `python -m zoo.select --answers`"]
    return []
