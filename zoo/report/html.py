"""One self-contained HTML page: every markdown table as an HTML table, its notes, every plot inlined."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1500px}table{border-collapse:collapse;"
         "margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
         "td:first-child,th:first-child{text-align:left;white-space:nowrap}img{max-width:100%;border:1px solid #eee}"
         ".note{color:#8a4b00}")
IMAGE_DATA = re.compile(r'src="data:image/png;base64,[A-Za-z0-9+/=]*"')


def _cells(line: str) -> list[str]:
    """Split a markdown row on unescaped pipes; the cell's text as zoo.markdown had it (escaped again below)."""
    return [html.unescape(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def table_html(markdown: str) -> str:
    lines = [_cells(line) for line in markdown.strip().splitlines()]
    head, body = lines[0], lines[2:]
    out = ["<table><thead><tr>", *(f"<th>{html.escape(c)}</th>" for c in head), "</tr></thead><tbody>"]
    for row in body:
        out += ["<tr>", *(f"<td>{html.escape(c)}</td>" for c in row), "</tr>"]
    return "".join(out + ["</tbody></table>"])


def blocks_html(markdown: str) -> str:
    """The little markdown a text section uses: ### headings, indented commands, tables, lists, paragraphs."""
    out = []
    for block in (b for b in markdown.strip().split("\n\n") if b.strip()):
        lines = block.splitlines()
        if all(line.startswith("|") for line in lines):
            out.append(table_html(block))
        elif lines[0].startswith("### "):
            out.append(f"<h3>{html.escape(lines[0][4:])}</h3>")
        elif all(line.startswith("    ") for line in lines):
            out.append(f"<pre>{html.escape(chr(10).join(line[4:] for line in lines))}</pre>")
        elif all(line.startswith("- ") for line in lines[1:]):
            items = "".join(f"<li>{html.escape(line[2:])}</li>" for line in lines[1:])
            out.append(f"<p>{html.escape(lines[0])}</p><ul>{items}</ul>")
        else:
            out.append(f"<p>{html.escape(' '.join(lines))}</p>")
    return "".join(out)


def page(title: str, sections, plots: list[Path], plot_key: str = "") -> str:
    """sections: objects with heading, intro, table (markdown) and notes; plot_key: HTML shown above the plots."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for s in sections:
        body += [f"<h2>{html.escape(s.heading)}</h2>", f"<p>{html.escape(s.intro)}</p>"]
        body += [f'<p class="note">NB: {html.escape(n)}</p>' for n in s.notes]
        body.append(table_html(s.table) if hasattr(s, "table") else blocks_html(s.text))
    body += ["<h2>Plots</h2>", plot_key]
    for plot in plots:
        data = base64.b64encode(plot.read_bytes()).decode()
        body.append(f'<figure><img alt="{plot.stem}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{plot.stem}</figcaption></figure>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def without_images(text: str) -> str:
    """The page with its inlined PNG bytes blanked: what --check compares (plots.json covers the data)."""
    return IMAGE_DATA.sub('src="data:image/png;base64,"', text)
