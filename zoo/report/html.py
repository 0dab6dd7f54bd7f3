"""One self-contained HTML page (index.html): a summary and a table of contents first, then every section with
its plots beside its table; long tables sort by a click on a heading and filter by family, size and
pretraining (plain HTML and CSS, one small inlined script, every plot inlined). Nothing is wider than a
1400 px window: cells wrap, long sources are footnotes."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from .interactive import LIBRARY_ID, scripts

WIDE_COLUMNS = 9        # a table with more columns takes the whole width: its plots sit above it, not beside
BREAKS = re.compile(r"([_/])")    # where a long tag or path may wrap inside a cell
STYLE = ("*{box-sizing:border-box}body{font-family:system-ui,sans-serif;font-size:14px;margin:0 auto;padding:0 14px;"
         "max-width:1380px}h1{margin:.4em 0 .2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
         "nav.toc{font-size:13px;display:flex;flex-wrap:wrap;gap:2px 16px}nav.toc a{white-space:nowrap}"
         "table{border-collapse:collapse;margin:.4em 0;font-size:12px;max-width:100%}"
         "td,th{border:1px solid #ccc;padding:2px 5px;text-align:right;overflow-wrap:break-word}"
         "th{background:#f3f3f3;vertical-align:bottom}table.sortable th{cursor:pointer}"
         "td:first-child,th:first-child{text-align:left}td:first-child{white-space:nowrap}img{max-width:100%;border:1px solid #eee}"
         "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:4px}"
         ".pair{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}.pair figure{flex:0 1 640px;margin:0}"
         ".pair figure.iplot{flex:0 1 640px;min-width:0}.plotly-figure{width:100%}"
         ".pair .tables{flex:1 1 560px;min-width:0;max-width:100%}.pair.wide .tables{flex-basis:100%}figcaption{font-size:12px;color:#555}"
         ".note{color:#8a4b00}.filters{font-size:12px;margin:.3em 0}.filters select{margin:0 .8em 0 .2em}"
         "details.ref>summary{cursor:pointer;color:#1a4f8b;margin:.3em 0}ol.cite{font-size:12px;color:#444}#summary{background:#fafcff;border:1px solid #dde6f3;padding:0 12px 8px}"
         ".view{border:1px solid #d6e4d0;background:#fbfdf9;padding:0 12px 6px;margin-top:1em}.view h2{margin-top:.5em}"
         ".view p{margin:.3em 0}.inputs{margin:.35em 0;display:flex;flex-wrap:wrap;gap:4px 14px;align-items:center}"
         ".inputs input{width:6.5em}.side{display:flex;gap:18px;flex-wrap:wrap}.side>div{flex:1 1 560px;min-width:0}"
         ".side h3{margin:.3em 0 0}.predicted{font-size:13px;color:#fff;background:#8a4b00;padding:1px 6px;"
         "border-radius:3px;vertical-align:middle}.loaded{color:#a00;font-weight:600}.answer-table td.t{text-align:left}"
         ".recipe{font-size:11px;display:inline-block;max-width:520px;text-align:left}")
# Sorting: a click on a heading sorts by that column (numbers as numbers, '-' last), again reverses it.
# Filtering: each select keeps the rows whose data-<facet> equals its value.
SCRIPT = """
function num(t){const v=parseFloat(t.replace(/[,%*x]/g,''));return isNaN(v)?null:v}
document.querySelectorAll('table.sortable').forEach(t=>t.querySelectorAll('th').forEach((th,i)=>{
 th.title='sort';th.addEventListener('click',()=>{const b=t.tBodies[0],rows=[...b.rows],up=th.dataset.up!=='1';
 t.querySelectorAll('th').forEach(h=>delete h.dataset.up);th.dataset.up=up?'1':'0';
 rows.sort((r,s)=>{const a=r.cells[i].textContent.trim(),c=s.cells[i].textContent.trim(),x=num(a),y=num(c);
  if(x!==null&&y!==null)return up?x-y:y-x;if(x!==null)return -1;if(y!==null)return 1;
  return up?a.localeCompare(c):c.localeCompare(a)});rows.forEach(r=>b.appendChild(r))})}));
document.querySelectorAll('.filters').forEach(f=>{const t=document.getElementById(f.dataset.for);
 f.addEventListener('change',()=>{const want={};f.querySelectorAll('select').forEach(s=>{if(s.value)want[s.name]=s.value});
 [...t.tBodies[0].rows].forEach(r=>{r.hidden=Object.keys(want).some(k=>r.dataset[k]!==want[k])})})});
"""
FACETS = ("family", "size", "pretraining")
FILTER_MIN_ROWS = 10     # shorter tables are read whole
IMAGE_DATA = re.compile(r'src="data:image/png;base64,[A-Za-z0-9+/=]*"')
CITED = re.compile(r"\[(\d+)\]$")
PLOT_SPEC = 'class="plot-spec"'      # an interactive figure's embedded data: the page then inlines plotly.js


def _cells(line: str) -> list[str]:
    """Split a markdown row on unescaped pipes; the cell's text as zoo.console.markdown had it (escaped again below)."""
    return [html.unescape(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _breakable(text: str) -> str:
    """A long cell may wrap after _ or / (a tag, a path); a short one stays whole."""
    return BREAKS.sub(r"\1<wbr>", html.escape(text)) if len(text) > 14 else html.escape(text)


def _cell(text: str, cite: str) -> str:
    """A cell; a trailing [n] links to footnote n of its section."""
    found = CITED.search(text) if cite else None
    if not found:
        return _breakable(text)
    return f'{_breakable(text[:found.start()])}<a href="#{cite}-{found[1]}">[{found[1]}]</a>'


def table_html(markdown: str, table_id: str = "", facets: dict | None = None, cite: str = "") -> str:
    """A markdown table as HTML. With facets (model -> {family, size, pretraining}), each row whose first cell
    names a model carries them as data- attributes (its own pretraining cell where the table has one), and a
    long table gets a select per facet; long tables sort by column."""
    lines = [_cells(line) for line in markdown.strip().splitlines()]
    head, body = lines[0], lines[2:]
    group_column = head.index("pretraining") if "pretraining" in head else None
    rows, seen = [], {f: set() for f in FACETS}
    for row in body:
        known = dict((facets or {}).get(row[0].rstrip(" *"), {}))
        if known and group_column is not None and row[group_column] not in ("", "-"):
            known["pretraining"] = row[group_column]
        for f, v in known.items():
            seen[f].add(v)
        attrs = "".join(f' data-{f}="{html.escape(v)}"' for f, v in known.items())
        rows.append(f"<tr{attrs}>" + "".join(f"<td>{_cell(c, cite)}</td>" for c in row) + "</tr>")
    long = len(body) >= FILTER_MIN_ROWS
    filters = ""
    if long and table_id and any(seen.values()):
        selects = "".join(f'{f} <select name="{f}"><option value="">all</option>'
                          + "".join(f"<option>{html.escape(v)}</option>" for v in sorted(seen[f])) + "</select>"
                          for f in FACETS if seen[f])
        filters = f'<div class="filters" data-for="{table_id}">filter: {selects}</div>'
    attrs = (f' id="{table_id}"' if table_id else "") + (' class="sortable"' if long else "")
    table = (f"{filters}<table{attrs}><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head)
             + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    # a long reference table is folded below the views and plots: one line until the reader opens it
    return (f'<details class="ref"><summary>the table: {len(body):,} rows ({", ".join(head[:3])}, ...); sort by a '
            f'click on a heading{", filter by family, size, pretraining" if filters else ""}</summary>{table}</details>'
            if long else table)


def by_machine(markdown: str) -> list[tuple[str, str]]:
    """A table whose first column is the machine, as one table per machine ((machine, table) each, first column
    dropped); any other table as [("", itself)]. Timings of different machines are never read side by side."""
    lines = markdown.strip().splitlines()
    if len(lines) < 3 or _cells(lines[0])[0] != "machine":
        return [("", markdown)]
    machines = list(dict.fromkeys(_cells(line)[0] for line in lines[2:]))
    if len(machines) < 2:
        return [("", markdown)]
    drop = re.compile(r"^\|[^|]*")          # the first cell (a machine name holds no pipe)
    return [(m, "\n".join(drop.sub("", line) for line in lines[:2] + [x for x in lines[2:] if _cells(x)[0] == m]))
            for m in machines]


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


def anchor(name: str) -> str:
    """cost.md -> cost: a section's id on the page."""
    return name.rsplit(".", 1)[0]


def figure(path: Path, caption: str = "") -> str:
    """The PNG inlined; a figure not written (build_reports(pictures=False), --check) is one without its bytes,
    as without_images shows every figure."""
    data = base64.b64encode(path.read_bytes()).decode() if path.is_file() else ""
    return (f'<figure><img alt="{path.stem}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption or path.stem)}</figcaption></figure>")


def section_html(name: str, section, figures: list[str], facets: dict) -> str:
    sid = anchor(name)
    out = [f'<section id="{sid}"><h2>{html.escape(section.heading)}</h2>']
    if getattr(section, "empty_line", None):
        return "".join(out + [f'<p class="note">{html.escape(section.empty_line)}</p></section>'])
    out += [f"<p>{html.escape(section.intro)}</p>", *(f'<p class="note">NB: {html.escape(n)}</p>' for n in section.notes)]
    body = ("".join((f"<h3>on {html.escape(machine)}</h3>" if machine else "")
                    + table_html(part, f"t-{sid}" + (f"-{i}" if machine else ""), facets, cite=sid)
                    for i, (machine, part) in enumerate(by_machine(section.table)))
            if hasattr(section, "table") else blocks_html(section.text))
    # a wide table, or a text section's tables (detectors.md's run to 16 columns), goes below its plots, full width
    wide = not hasattr(section, "table") or len(_cells(section.table.splitlines()[0])) > WIDE_COLUMNS
    out.append(f'<div class="pair{" wide" if wide else ""}">{"".join(figures)}<div class="tables">{body}</div></div>'
               if figures else body)
    cited = getattr(section, "footnotes", [])
    if cited:
        out.append('<ol class="cite">' + "".join(f'<li id="{sid}-{i}">{html.escape(c)}</li>'
                                                 for i, c in enumerate(cited, 1)) + "</ol>")
    return "".join(out + ["</section>"])


def summary_html(summary: dict, sections: dict, pareto: list[str]) -> str:
    """summary: {"three": markdown table, "three_note": str, "answers": [str], "built": str, "groups": {word:
    meaning}}."""
    held = []
    for name, s in sections.items():
        n = max(0, len(s.table.strip().splitlines()) - 2) if hasattr(s, "table") else None    # None: a text section
        what = ("left out" if getattr(s, "left_out", None) and not s.when_empty else
                "worked answers" if n is None else f"{n} rows")
        first = s.intro.split(". ")[0].rstrip(".")
        held.append(f'<li><a href="#{anchor(name)}">{html.escape(s.heading)}</a> ({what}): {html.escape(first)}.</li>')
    answers = "".join(f"<li>{html.escape(a)}</li>" for a in summary["answers"]) or "<li>no stored answers in results/ (answers.json, select-answer.json)</li>"
    return (f'<section id="summary"><h2>Summary</h2><p>{html.escape(summary["built"])}</p>'
            f'<h3>The default three compared</h3><p>{html.escape(summary["three_note"])}</p>'
            f'{table_html(summary["three"])}'
            f'<h3>Worked answers (<a href="#choosing">how</a>)</h3><ul>{answers}</ul>'
            + (f'<h3>Accuracy against cost: Pareto fronts per pretraining group</h3><div class="pair">{"".join(pareto)}'
               '</div>' if pareto else "")     # no figure, no heading: the plots are then in 'not measured here'
            + f'<h3>What each section holds</h3><ul>{"".join(held)}</ul>{_groups(summary.get("groups", {}))}</section>')


def _groups(groups: dict[str, str]) -> str:
    """The pretraining groups the tables filter by, folded: each word and what it means."""
    if not groups:
        return ""
    items = "".join(f"<dt><b>{html.escape(k)}</b></dt><dd>{html.escape(v)}</dd>" for k, v in groups.items())
    return f"<details><summary>The pretraining groups (what the filters and Pareto fronts group by)</summary>" \
           f"<dl>{items}</dl></details>"


def page(title: str, sections: dict, plots: dict[str, tuple[Path, str, bool]], placement: dict[str, tuple],
         summary: dict, facets: dict, plot_key: str = "", answer_views: tuple[str, list[str]] = ("", [])) -> str:
    """sections: markdown file name -> Section/TextSection; plots: PNG name -> (path, caption, has data, the
    interactive figure's HTML standing for it: None to inline the PNG, '' when another figure holds it);
    placement: PNG name -> the sections it sits beside ('summary': the summary's Pareto plots); answer_views: (the
    answer views' HTML (zoo.report.views), right after the summary; one line per view without rows). A section
    without rows is one line of the 'not measured here' list at the end, never a heading."""
    drawn = {name: figure(path, caption) if live is None else live
             for name, (path, caption, has_data, live) in plots.items() if has_data and live != ""}
    beside: dict[str, list[str]] = {}
    for name, places in placement.items():
        for where in places if name in drawn else ():
            beside.setdefault(where, []).append(drawn[name].replace('"iplot-', f'"iplot-{anchor(where)}-'))  # ids unique
    empty = [name for name, (_, _, has_data, _) in plots.items() if not has_data]
    views, absent = answer_views
    shown = {n: s for n, s in sections.items() if not is_absent(s)}
    toc = "".join(f'<a href="#{anchor(n)}">{html.escape(s.heading)}</a>' for n, s in shown.items())
    views_toc = "".join(f'<a href="#{v}">{html.escape(t)}</a>' for v, t in VIEW_TITLES.items() if f'id="{v}"' in views)
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<nav class="toc"><a href="#summary">Summary</a>{views_toc}{toc}'
            f'{"<a href=#not-here>Not measured here</a>" if absent or len(shown) < len(sections) or empty else ""}</nav>',
            summary_html(summary, shown, beside.get("summary", [])), views, plot_key]
    body += [section_html(name, s, beside.get(name, []), facets) for name, s in shown.items()]
    missing = list(absent) + [f"{s.heading}: {s.left_out}" for s in sections.values() if is_absent(s)]
    missing += [f"plot '{plots[name][1]}' ({name}): nothing to draw from results/ (its PNG says why)" for name in empty]
    if missing:
        body.append('<section id="not-here"><h2>Not measured here</h2><ul class="note">'
                    + "".join(f"<li>{html.escape(m)}</li>" for m in missing) + "</ul></section>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script>{scripts() if any(PLOT_SPEC in part for part in body) else ''}</body></html>\n")


VIEW_TITLES = {"view-gpu": "Which GPU and batch?", "view-cpu": "Which backbone on this CPU?",
               "view-task": "Which backbone for a task?"}


def is_absent(section) -> bool:
    """A section with no rows whose empty state is not good news: one line of 'not measured here', no heading."""
    return bool(getattr(section, "left_out", None)) and not getattr(section, "when_empty", "")


def without_images(text: str) -> str:
    """The page with its inlined PNG bytes blanked: what --check compares (plots.json covers the data)."""
    text = IMAGE_DATA.sub('src="data:image/png;base64,"', text)
    return re.sub(f'<script id="{LIBRARY_ID}">.*?</script>', f'<script id="{LIBRARY_ID}"></script>', text, flags=re.DOTALL)
