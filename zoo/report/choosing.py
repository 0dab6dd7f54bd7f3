"""The report's "Choosing a backbone" section: worked questions answered by `zoo.select` itself.

Only counted constraints (cost on the meta device, published accuracy), so the answers are the same
on every machine and `zoo.report --check` keeps them current (the README's copy is checked by a
test); a measured question (latency on one machine) is in the README, with its machine, out of --check.
"""
from __future__ import annotations

import functools

QUESTIONS = [  # (question, zoo.select arguments)
    ("The most accurate ImageNet-1k-only backbone under 5 GMACs at 224 px",
     ["--resolution", "224", "--max-gmacs", "5", "--pretraining", "in1k"]),
    ("The most robust to distribution shift (ImageNetV2 top-1) under 20 GMACs at 384 px",
     ["--resolution", "384", "--max-gmacs", "20", "--rank", "imagenet_v2"]),
    ("What serves at batch 32 in 1 GiB (fp32 weights + activations) at 224 px, ranked by top-1",
     ["--resolution", "224", "--max-serve-mib", "1024", "--batch-size", "32"]),
]


def _query(args: list[str]) -> dict:
    flags = dict(zip(args[::2], args[1::2]))
    return {"resolution": flags["--resolution"], "max_gmacs": flags.get("--max-gmacs"),
            "max_serve_mib": flags.get("--max-serve-mib"), "pretraining": flags.get("--pretraining"),
            "rank": flags.get("--rank", "top1"), "batch_size": flags.get("--batch-size", "1")}


@functools.lru_cache(maxsize=1)
def answers() -> tuple:
    """(question, command, selection) per question; counted on meta and independent of results/,
    so computed once per process."""
    from ..shortlist import select

    return tuple((question, f"python -m zoo.select {' '.join(args)}", select(None, save=False, **_query(args)))
                 for question, args in QUESTIONS)


def choosing_markdown(compact: bool = False) -> str:
    """Each question, its command and zoo.select's markdown output (compact: without the excluded list)."""
    from ..select import render

    parts = []
    for question, command, result in answers():
        text = render(result, "markdown")
        if compact:
            text = text[:text.index("\nexcluded (")] + f"\n(and {len(result['excluded'])} excluded, each with its reason)\n"
        parts.append(f"### {question}\n\n    {command} --format markdown\n\n{text}")
    return "\n".join(parts)
