"""The report's "Choosing a backbone" section: the worked questions' answers that `zoo.select --answers`
stored in results/answers.json, rendered as zoo.select prints them; nothing is measured here."""
from __future__ import annotations

from ..console.markdown import markdown_inline
from ..answers.stored import ANSWERS_FILE, SELECT_ANSWER_FILE
from ..answers.text import render


def choosing_markdown(stored: list[dict] | None, compact: bool = False, measured: dict | None = None) -> str:
    """Each stored question, its command and zoo.select's markdown output (compact: without the excluded
    list); `stored` is zoo.answers.stored.load_answers' list; `measured`: the last measured answer zoo.select kept
    beside its rows (results/select-answer.json), shown first."""
    parts = [f"### Your last measured zoo.select answer (results/{SELECT_ANSWER_FILE})\n\n{render(measured, 'markdown')}"] \
        if measured else []
    if stored is None:
        return "\n".join(parts + [f"No stored worked answers in results/{ANSWERS_FILE} (`python -m zoo.select "
                                   f"--answers` writes them).\n"])
    for item in stored:
        result = item["answer"]
        text = render(result, "markdown")
        if compact:
            text = text[:text.index("\nexcluded (")] + f"\n(and {len(result['excluded'])} excluded, each with its reason)\n"
        # the question and command come from answers.json: text on one line, never markup (an indented code
        # block shows its line as it is; a line break would end it)
        command = " ".join(str(item["command"]).splitlines())
        parts.append(f"### {markdown_inline(item['question'])}\n\n    {command} --format markdown\n\n{text}")
    return "\n".join(parts)
