"""Markdown from others' text (issue 42, defect 6): the question and command of answers.json in choosing.md, a plan's
screened_out reasons in `zoo.select --format markdown`. Rendered by a CommonMark renderer (markdown-it-py, the one
rich uses): no tag of theirs reaches the HTML."""
from markdown_it import MarkdownIt

from zoo.report.choosing import choosing_markdown
from zoo.answers.text import render

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


def _answer(reason: str) -> dict:
    return {"query": {"resolution": 224, "rank": "top1", "models": ["deit_ti"], "padded_from": None,
                      "pareto_axes": {"x": "gmacs", "y": "top1", "lower_x_is_better": True}, "rank_note": None},
            "shortlist": [], "excluded": [{"model": "deit_ti", "img_size": 224, "reason": reason}],
            "undecided": [], "pareto": {}}


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").render(markdown)


def test_choosing_md_shows_the_question_and_command_as_text():
    stored = [{"question": f"fastest {SCRIPT}", "command": f"python -m zoo.select\n\n{IMG}",
               "answer": _answer(f"screened {SCRIPT}")}]
    html = _html(choosing_markdown(stored))
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html         # still there, as text


def test_format_markdown_shows_a_plans_reasons_as_text():
    text = render(_answer(f"from the plan {IMG}\n{SCRIPT}"), "markdown")
    html = _html(text)
    assert "<script" not in html and "<img" not in html and "onerror=alert(1)" in html
    # the plain table format prints the text as it is (a terminal runs no markup)
    assert IMG in render(_answer(IMG), "table")
