"""The one markdown-table renderer, for the printed comparison and every report table."""
from __future__ import annotations


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """None shows as "-"; a "|" inside a cell is escaped so it cannot split the row."""
    def cell(value) -> str:
        return "-" if value is None else str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
