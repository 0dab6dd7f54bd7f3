"""One self-contained HTML page: every markdown table as an HTML table, every plot inlined."""
from __future__ import annotations

import base64
import html
from pathlib import Path

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;"
         "margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}img{max-width:100%;border:1px solid #eee}")


def table_html(markdown: str) -> str:
    lines = [line.strip().strip("|").split("|") for line in markdown.strip().splitlines()]
    head, body = lines[0], lines[2:]
    out = ["<table><thead><tr>", *(f"<th>{html.escape(c.strip())}</th>" for c in head), "</tr></thead><tbody>"]
    for row in body:
        out += ["<tr>", *(f"<td>{html.escape(c.strip())}</td>" for c in row), "</tr>"]
    return "".join(out + ["</tbody></table>"])


def page(title: str, sections: list[tuple[str, str, str]], plots: list[Path]) -> str:
    """sections: (heading, intro text, markdown table)."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for heading, intro, table in sections:
        body += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(intro)}</p>", table_html(table)]
    body.append("<h2>Plots</h2>")
    for plot in plots:
        data = base64.b64encode(plot.read_bytes()).decode()
        body.append(f'<figure><img alt="{plot.stem}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{plot.stem}</figcaption></figure>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
