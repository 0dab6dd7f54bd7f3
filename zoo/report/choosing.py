"""The report's "Choosing a backbone" section: the worked questions' answers that `zoo.select --answers`
stored in results/answers.json, rendered as zoo.select prints them; nothing is measured here."""
from __future__ import annotations

from ..select.answers import ANSWERS_FILE
from ..select.table import render


def choosing_markdown(stored: list[dict] | None, compact: bool = False) -> str:
    """Each stored question, its command and zoo.select's markdown output (compact: without the excluded
    list); `stored` is zoo.select.answers.load_answers' list."""
    if stored is None:
        return f"No stored answers in results/{ANSWERS_FILE} (`python -m zoo.select --answers` writes them).\n"
    parts = []
    for item in stored:
        result = item["answer"]
        text = render(result, "markdown")
        if compact:
            text = text[:text.index("\nexcluded (")] + f"\n(and {len(result['excluded'])} excluded, each with its reason)\n"
        parts.append(f"### {item['question']}\n\n    {item['command']} --format markdown\n\n{text}")
    return "\n".join(parts)
