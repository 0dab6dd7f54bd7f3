"""The one markdown-table renderer, for the printed comparison and every report table."""
from __future__ import annotations


def markdown_text(value) -> str:
    """One line of text as markdown shows it, never runs it: "&", "<" and ">" as HTML entities (a row's text,
    a cpu_model of "<script>", reaches a markdown viewer as text), line breaks as spaces."""
    text = " ".join(str(value).splitlines())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """None shows as "-"; each cell is markdown_text, and a "|" inside it is escaped so it cannot split the row."""
    def cell(value) -> str:
        return "-" if value is None else markdown_text(value).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
