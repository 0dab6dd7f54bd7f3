"""One colour and marker per model family, fixed, for every plot and the HTML page (no matplotlib: the page and a
report that draws no figure need none)."""
from __future__ import annotations

import html

from ..models.catalog import FAMILIES as CATALOG

# The registry's plotted families in the family table's order (zoo.models.catalog); anything else (timm:<name>,
# ViTDet's backbones) is "other". Colours: matplotlib's tab10, then two more; markers differ too, so a family is
# told apart in greyscale as well.
FAMILIES = (*(name for name, family in CATALOG.items() if family.plotted), "other")
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf", "#393b79", "#000000")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
FAMILY_STYLE: dict[str, dict[str, str]] = {f: {"color": c, "marker": m}
                                           for f, c, m in zip(FAMILIES, _COLOURS, _MARKERS)}
_GLYPHS = dict(zip(_MARKERS, "\u25cf\u25a0\u25b2\u25c6\u25bc\u271a\u2716\u2605\u25c0\u25b6\u2b22\u2b1f"))  # the markers as text


def family_key_html(families=FAMILIES) -> str:
    """The same key for the HTML page: each family's marker in its colour, then its name."""
    spans = [f'<span style="color:{FAMILY_STYLE[f]["color"]}">{_GLYPHS[FAMILY_STYLE[f]["marker"]]}</span> '
             f"{html.escape(f)}" for f in families]
    return f'<p class="key">Every plot draws a family in one colour and marker: {" &nbsp; ".join(spans)}</p>'


def family_of(family: str | None) -> str:
    return family if family in FAMILY_STYLE else "other"


def style_of(family: str | None) -> dict[str, str]:
    return FAMILY_STYLE[family_of(family)]
