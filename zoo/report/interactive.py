"""The page's plots, interactive: plotly.js figures built from the same data plots.json keeps (the markdown reports
keep the PNGs). Hover names the model and its numbers, drag zooms, a click on a legend entry hides a family (a
double click keeps only it). One figure per panel, two per row at 1400 px, text at 12 px; points carry no labels
(hover instead), so no two labels can overlap. plotly.js is inlined once; nothing is fetched at view time."""
from __future__ import annotations

import html
from importlib import resources

from .escaping import json_for_script
from .families import FAMILY_STYLE, family_of

FONT_PX = 12                 # every label of every figure, on screen (the floor is 10 px)
HEIGHT_PX = 440
LIBRARY_ID = "plotly-js"     # the inlined library's <script> (zoo.report.html.without_images blanks it for --check)
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond", "v": "triangle-down", "P": "cross",
           "X": "x", "*": "star", "<": "triangle-left", ">": "triangle-right", "h": "hexagon", "p": "pentagon"}
NUMBER = ",.4~r"             # d3-format: thousands separated, 4 significant digits, never an exponent


def library() -> str:
    """plotly.js as shipped inside the plotly package (the same file plotly's include_plotlyjs=True inlines)."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def _marker(family: str | None, **extra) -> dict:
    s = FAMILY_STYLE[family_of(family)]
    return {"color": s["color"], "symbol": SYMBOLS[s["marker"]], "size": 8, **extra}


def _axis(title: str, log: bool = False) -> dict:
    """A log axis labels 1, 2 and 5 of each decade only ('D2'): all nine digits of a narrow range would collide."""
    return {"title": {"text": title}, "type": "log" if log else "linear", "tickformat": NUMBER, "zeroline": False,
            "automargin": True, **({"dtick": "D2"} if log else {})}


def _layout(title: str, x: dict, y: dict, **extra) -> dict:
    return {"title": {"text": title, "font": {"size": FONT_PX + 1}, "x": 0.01, "xanchor": "left"},  # modebar: right
            "font": {"size": FONT_PX}, "xaxis": x,
            "yaxis": y, "height": HEIGHT_PX, "margin": {"l": 60, "r": 10, "t": 50, "b": 50}, "hovermode": "closest",
            "legend": {"title": {"text": "click: hide, double click: only"}, "font": {"size": FONT_PX}}, **extra}


def _hover(*fields: tuple[str, str]) -> str:
    """A hovertemplate: the trace's text (the model) then each (label, customdata index or %{x}/%{y})."""
    return "<b>%{text}</b>" + "".join(f"<br>{label}: {value}" for label, value in fields) + "<extra></extra>"


def _by_family(points: list[dict], family) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for p in points:
        grouped.setdefault(family_of(family(p)), []).append(p)
    return dict(sorted(grouped.items(), key=lambda kv: list(FAMILY_STYLE).index(kv[0])))


def lines_by_model(rows: list[dict], x_axis: tuple[str, str], y_axis: tuple[str, str], family, title: str,
                   log: tuple[bool, bool] = (True, True), flag: str | None = None) -> dict:
    """One line per model, coloured by family; one legend entry per family toggles all its lines. x_axis, y_axis:
    (the rows' field, the axis title). A point whose `flag` field is true (a loaded timing) is drawn hollow and
    hovers as '<model> (loaded)'."""
    (x, x_title), (y, y_title) = x_axis, y_axis
    traces = []
    for fam, part in _by_family(rows, family).items():
        models = sorted({r["model"] for r in part})
        for i, model in enumerate(models):
            mine = sorted((r for r in part if r["model"] == model), key=lambda r: r[x])
            traces.append({"type": "scatter", "mode": "lines+markers", "name": fam, "legendgroup": fam,
                           "showlegend": i == 0, "x": [r[x] for r in mine], "y": [r[y] for r in mine],
                           "text": [model + (" (loaded)" if flag and r.get(flag) else "") for r in mine],
                           "marker": _marker(fam, symbol=[SYMBOLS[FAMILY_STYLE[fam]["marker"]]
                                                          + ("-open" if flag and r.get(flag) else "") for r in mine]),
                           "line": {"color": FAMILY_STYLE[fam]["color"], "width": 1.2},
                           "hovertemplate": _hover((x_title, f"%{{x:{NUMBER}}}"), (y_title, f"%{{y:{NUMBER}}}"))})
    return {"data": traces, "layout": _layout(title, _axis(x_title, log[0]), _axis(y_title, log[1]))}


def pareto(points: list[dict], x: str, family, title: str, x_title: str, log_x: bool = True,
           y: tuple[str, str] = ("top1", "top-1 % (ImageNet-1k val)")) -> dict:
    """Top-1 against x: points by family (hover: model, pretraining group, numbers), and each pretraining group's
    Pareto front as a dashed line of its own (legend: 'front: <group>'); fronts of different groups are not
    comparable, so each can be shown alone."""
    traces, grouped = [], any("pretraining" in p for p in points)
    for fam, part in _by_family(points, family).items():
        traces.append({"type": "scatter", "mode": "markers", "name": fam, "legendgroup": fam,
                       "x": [p[x] for p in part], "y": [p[y[0]] for p in part], "text": [p["model"] for p in part],
                       "customdata": [[p.get("pretraining", "-"), p.get("img_size") or p.get("size")] for p in part],
                       "marker": _marker(fam),
                       "hovertemplate": _hover(*([("pretraining", "%{customdata[0]}")] if grouped else []),
                                               ("at", "%{customdata[1]} px"), (x_title, f"%{{x:{NUMBER}}}"),
                                               (y[1], "%{y:.2f}"))})
    for group in sorted({p["pretraining"] for p in points if "pretraining" in p}):
        front = sorted((p for p in points if p["pretraining"] == group and p.get(f"pareto_{x}")), key=lambda p: p[x])
        if front:
            traces.append({"type": "scatter", "mode": "lines", "name": f"front: {group}", "legendgroup": "front",
                           "x": [p[x] for p in front], "y": [p[y[0]] for p in front],
                           "text": [f"{p['model']} (front: {group})" for p in front],
                           "line": {"dash": "dot", "width": 1, "shape": "hv"}, "hovertemplate": _hover()})
    return {"data": traces, "layout": _layout(title, _axis(x_title, log_x), _axis(y[1]))}


def with_buttons(figures: dict[str, dict], title: str) -> dict:
    """Several figures of the same axes in one, a button per figure (e.g. one per GPU) showing only its traces."""
    names, data, spans = list(figures), [], []
    for name in names:
        start = len(data)
        data += [{**t, "visible": not spans} for t in figures[name]["data"]]
        spans.append((start, len(data)))
    buttons = [{"label": name, "method": "update",
                "args": [{"visible": [lo <= i < hi for i in range(len(data))]},
                         {"title.text": f"{title}: {name}"}]} for name, (lo, hi) in zip(names, spans)]
    layout = {**figures[names[0]]["layout"], "title": {**figures[names[0]]["layout"]["title"], "text": f"{title}: {names[0]}"},
              "updatemenus": [{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0, "y": 1.02,
                               "xanchor": "left", "yanchor": "bottom", "showactive": True}]}
    layout["margin"] = {**layout["margin"], "t": 80}
    return {"data": data, "layout": layout}


def bars(rows: list[dict], columns: list[str], title: str, x_title: str, stacked: bool) -> dict:
    """Horizontal bars per model: one trace per column (stacked: shares adding up; else side by side)."""
    models = [r["model"] for r in rows]
    traces = [{"type": "bar", "orientation": "h", "name": c, "y": models, "x": [r.get(c) for r in rows],
               "text": models, "hovertemplate": _hover((c, f"%{{x:{NUMBER}}}")), "textposition": "none"}
              for c in columns]
    layout = _layout(title, _axis(x_title), {"automargin": True, "type": "category", "autorange": "reversed"},
                     barmode="stack" if stacked else "group", height=max(HEIGHT_PX, 120 + 18 * len(rows)))
    return {"data": traces, "layout": layout}


def html_of(figure: dict, number: int, caption: str) -> str:
    """A figure's place on the page; the script at the page's end draws it from its embedded JSON."""
    spec = json_for_script(figure)
    return (f'<figure class="iplot"><div class="plotly-figure" id="iplot-{number}"></div><script type="application/'
            f'json" class="plot-spec" data-for="iplot-{number}">{spec}</script>'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


DRAW = ("document.querySelectorAll('script.plot-spec').forEach(s=>{const f=JSON.parse(s.textContent);"
        "Plotly.newPlot(s.dataset.for,f.data,f.layout,{responsive:true,displaylogo:false,"
        "modeBarButtonsToRemove:['toImage','sendDataToCloud']})});")


def scripts() -> str:
    """The library once and the drawing script: appended to the page's end when it holds a figure."""
    return f'<script id="{LIBRARY_ID}">{library()}</script><script>{DRAW}</script>'
