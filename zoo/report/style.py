"""One look for every plot and the HTML page: a fixed colour and marker per model family (one mapping,
so a family looks the same in every panel and plot), labels placed so that no two overlap, and plain
numbers on log axes. A new plot uses it like this (see plots.py):

    fig, ax = plt.subplots()
    style.draw_families(ax, rows, x="res", y="img/s", lines_by="model")   # colour + marker from the family
    style.plain_log_axis(ax, "y")
    style.family_legend(ax, families)                                      # each family once
    fig.tight_layout()
    style.place_labels(ax, [(text, x, y), ...])                            # after the layout is final
    drawn = style.save(fig, path)                                          # {"family_colours", "log_ticks"}
"""
from __future__ import annotations

import contextlib
import io
import math
import weakref
from pathlib import Path

from . import mpl_home  # noqa: F401 - before matplotlib: its font cache goes to the user cache
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import colors as mcolors  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from ..store.safe_io import write_atomic  # noqa: E402
from .families import _GLYPHS, FAMILIES, FAMILY_STYLE, family_key_html, family_of, style_of  # noqa: E402,F401

FAMILY_GID = "family:"        # artists drawn for a family carry gid "family:<name>" (save() reads them back)
LABEL_GID = "point-label"     # labels placed by place_labels


def draw_families(ax, rows: list[dict], x: str, y: str, lines_by: str | None = None, size: float = 36,
                  hollow: str | None = None, lw: float = 1.2) -> list[str]:
    """Each row at (x, y) in its family's colour and marker; with lines_by, one line per value of that key
    (a model) through its rows sorted by x. Rows whose `hollow` key is true are drawn unfilled. Returns
    the families drawn, in FAMILIES order."""
    families = sorted({family_of(r.get("family")) for r in rows}, key=FAMILIES.index)
    for family in families:
        mine = [r for r in rows if family_of(r.get("family")) == family]
        look = FAMILY_STYLE[family]
        if lines_by:
            for key in sorted({r[lines_by] for r in mine}):
                line = sorted((r for r in mine if r[lines_by] == key), key=lambda r: r[x])
                ax.plot([r[x] for r in line], [r[y] for r in line], color=look["color"], lw=lw, alpha=0.8,
                        gid=FAMILY_GID + family)
        for filled in (True, False):
            part = [r for r in mine if bool(hollow and r.get(hollow)) != filled]
            if part:
                ax.scatter([r[x] for r in part], [r[y] for r in part], s=size, marker=look["marker"],
                           edgecolors=look["color"], facecolors=look["color"] if filled else "none",
                           linewidths=1.0, zorder=3, gid=FAMILY_GID + family)
    return families


def family_handles(families, extra: tuple = ()) -> tuple[list, list[str]]:
    """Legend handles: each family once, in FAMILIES order, then any extra (handle, label) pairs."""
    ordered = sorted({family_of(f) for f in families}, key=FAMILIES.index)
    handles = [Line2D([], [], color=FAMILY_STYLE[f]["color"], marker=FAMILY_STYLE[f]["marker"], lw=0, markersize=6)
               for f in ordered]
    return handles + [h for h, _ in extra], ordered + [label for _, label in extra]


def family_legend(target, families, extra: tuple = (), **kwargs):
    """One legend (on an axes or a figure) listing each family once."""
    handles, labels = family_handles(families, extra)
    kwargs.setdefault("fontsize", 7)
    kwargs.setdefault("title", "family")
    kwargs.setdefault("title_fontsize", 7)
    return target.legend(handles, labels, **kwargs)


def plain_number(value: float, _position=None) -> str:
    """60, 2, 0.5, 1,000: never 6 x 10^1."""
    if value == 0:
        return "0"
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    return f"{value:.6g}"


def plain_log_axis(ax, which: str = "x") -> None:
    """Plain numbers at 1-2-5 ticks on a log axis (1-1.5-2-3-4-5-7 within about a decade, decades over many
    decades). Call it once
    the data is drawn: the ticks follow the axis' span."""
    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        low, high = sorted(ax.get_xlim() if name == "x" else ax.get_ylim())
        decades = math.log10(high / low) if low > 0 else 3
        subs = (1.0,) if decades > 4 else (1.0, 2.0, 5.0) if decades > 1.2 else (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=40))
        axis.set_major_formatter(FuncFormatter(plain_number))
        axis.set_minor_formatter(NullFormatter())


# Candidate offsets (points) around an anchor, nearest ring first; within a ring: right, left, up, down,
# then the diagonals. A label further out than the first ring gets a thin leader line to its point.
_ANGLES = (0, 180, 90, 270, 30, 330, 150, 210, 60, 300, 120, 240)
_RINGS = (4, 9, 15, 22, 30, 40, 52, 66, 82)


def _box(anchor, width, height, dx, dy) -> tuple[float, float, float, float]:
    """The text box (x0, y0, x1, y1) in pixels for an offset (dx, dy) in pixels, aligned away from the anchor."""
    x = anchor[0] + dx - (0 if dx > 0.3 * abs(dy) else width if dx < -0.3 * abs(dy) else width / 2)
    y = anchor[1] + dy - (0 if dy > 0.3 * abs(dx) else height if dy < -0.3 * abs(dx) else height / 2)
    return x, y, x + width, y + height


def _overlaps(box, others: np.ndarray, pad: float = 1.0) -> np.ndarray:
    """Overlap area of box (x0, y0, x1, y1) with each row of others (n x 4), in pixels^2."""
    if not len(others):
        return np.zeros(0)
    w = np.minimum(box[2], others[:, 2]) + pad - np.maximum(box[0], others[:, 0])
    h = np.minimum(box[3], others[:, 3]) + pad - np.maximum(box[1], others[:, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


def _obstacles(ax, renderer) -> tuple[np.ndarray, np.ndarray]:
    """(markers and legends, line samples) as boxes in pixels: what a label should not cover."""
    solid = []
    for collection in ax.collections:
        points = collection.get_offset_transform().transform(collection.get_offsets())
        solid += [(x - 4, y - 4, x + 4, y + 4) for x, y in points]
    legend = ax.get_legend()
    if legend is not None:
        box = legend.get_window_extent(renderer)
        solid.append((box.x0, box.y0, box.x1, box.y1))
    samples = []
    for line in ax.lines:
        path = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
        if line.get_drawstyle().startswith("steps"):
            path = np.repeat(path, 2, axis=0)[1:-1]
            path[1::2, 1] = path[0::2, 1]                 # steps-post: along x first, then up
        for (x0, y0), (x1, y1) in zip(path[:-1], path[1:]):
            n = max(2, int(math.hypot(x1 - x0, y1 - y0) / 4))
            samples += [(x0 + (x1 - x0) * t - 1, y0 + (y1 - y0) * t - 1, x0 + (x1 - x0) * t + 1, y0 + (y1 - y0) * t + 1)
                        for t in np.linspace(0, 1, n)]
    finite = [b for b in samples if all(map(math.isfinite, b))]
    return np.array(solid, dtype=float).reshape(-1, 4), np.array(finite, dtype=float).reshape(-1, 4)


def place_labels(ax, labels: list[tuple[str, float, float]], fontsize: float = 7) -> list:
    """Annotate each (text, x, y) next to its point where its box meets no other label (never), and as
    little as it can markers, the legend and lines, inside the axes; deterministic (the first cheapest
    candidate in a fixed order). Call it after the figure's layout is final (tight_layout)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72
    frame = ax.get_window_extent(renderer)
    solid, line_samples = _obstacles(ax, renderer)
    placed_boxes = np.zeros((0, 4))
    placed = []
    for text, x, y in sorted(labels, key=lambda label: (-label[2], label[1], label[0])):
        anchor = ax.transData.transform((x, y))
        probe = ax.text(0, 0, text, fontsize=fontsize)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        best = None
        for ring in _RINGS:
            for angle in _ANGLES:
                dx, dy = (ring * px_per_pt * math.cos(math.radians(angle)),
                          ring * px_per_pt * math.sin(math.radians(angle)))
                box = _box(anchor, extent.width, extent.height, dx, dy)
                outside = box[0] < frame.x0 or box[1] < frame.y0 or box[2] > frame.x1 or box[3] > frame.y1
                cost = (1e9 * outside + 1e6 * _overlaps(box, placed_boxes, pad=2).sum()
                        + 10 * _overlaps(box, solid).sum() + _overlaps(box, line_samples).sum() + ring / 100)
                if best is None or cost < best[0]:
                    best = (cost, dx, dy, box, ring)
            if best[0] < 1:               # nothing covered on this ring: nearer is better than further
                break
        _, dx, dy, box, ring = best
        placed_boxes = np.vstack([placed_boxes, box])
        ha = "left" if dx > 0.3 * abs(dy) else "right" if dx < -0.3 * abs(dy) else "center"
        va = "bottom" if dy > 0.3 * abs(dx) else "top" if dy < -0.3 * abs(dx) else "center"
        placed.append(ax.annotate(
            text, (x, y), xytext=(dx / px_per_pt, dy / px_per_pt), textcoords="offset points", fontsize=fontsize,
            ha=ha, va=va, gid=LABEL_GID, annotation_clip=False,
            arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5, shrinkA=0, shrinkB=2) if ring > _RINGS[1] else None))
    return placed


def _hex(colour) -> str | None:
    rgba = mcolors.to_rgba_array(colour)
    return mcolors.to_hex(rgba[0], keep_alpha=False) if len(rgba) else None


def drawn_style(fig) -> dict:
    """What the figure shows, read back from its artists: each family's colours (one, if the mapping held)
    and the tick labels of every log axis."""
    colours: dict[str, set] = {}
    log_ticks = []
    for ax in fig.axes:
        for artist in [*ax.collections, *ax.lines]:
            gid = artist.get_gid() or ""
            if gid.startswith(FAMILY_GID):
                colour = _hex(artist.get_edgecolor() if hasattr(artist, "get_edgecolors") else artist.get_color())
                colours.setdefault(gid[len(FAMILY_GID):], set()).add(colour)
        for name in "xy":
            if (ax.get_xscale() if name == "x" else ax.get_yscale()) == "log":
                log_ticks.append(visible_tick_labels(ax, name))
    return {"family_colours": {f: sorted(c) for f, c in sorted(colours.items())}, "log_ticks": log_ticks}


def visible_tick_labels(ax, name: str) -> list[str]:
    axis = ax.xaxis if name == "x" else ax.yaxis
    low, high = sorted(ax.get_xlim() if name == "x" else ax.get_ylim())
    ticks = [t for t in axis.get_majorticklocs() if low <= t <= high]
    formatter = axis.get_major_formatter()
    formatter.set_locs(ticks)
    return [formatter(t, i) for i, t in enumerate(ticks)]


DRAWN: dict[str, dict] = {}     # PNG file name -> drawn_style of its figure, filled by save(); redraw.draw reads it
_HELD: dict[str, tuple] | None = None    # inside held_figures(): PNG file name -> (figure, path), not yet written
_LAYOUT_AT_WRITE: weakref.WeakSet = weakref.WeakSet()   # figures whose tight layout waits for their PNG (save())


@contextlib.contextmanager
def held_figures():
    """While a report draws a figure (redraw.draw): save() keeps each figure instead of writing its PNG, so the
    caller writes it (write_png, with its digests) or not (--check); every held figure is closed at the end."""
    global _HELD
    _HELD = held = {}
    try:
        yield held
    finally:
        _HELD = None
        for fig, _ in held.values():
            plt.close(fig)


def write_png(fig, path: Path, text: dict[str, str] | None = None) -> bytes:
    """The PNG (no layout change: labels were placed for this one), renamed into place: a symlink at `path` is
    replaced, not followed; returns its bytes. `text`: tEXt chunks to keep in it (zoo.report.redraw's digests)."""
    if fig in _LAYOUT_AT_WRITE:
        _LAYOUT_AT_WRITE.discard(fig)
        fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None, **(text or {})})
    write_atomic(path, png.getvalue())
    return png.getvalue()


def save(fig, path: Path, layout_at_write: bool = False) -> dict:
    """Write the PNG (inside held_figures(): keep the figure for the caller to write), note drawn_style(fig) in
    DRAWN under the file's name, and return it. `layout_at_write`: the figure's tight layout is done only when
    its PNG is written (for a figure whose data and style do not depend on it: "nothing to plot"); a report
    that writes no PNG then lays none out (a fifth of a second each)."""
    if layout_at_write:
        _LAYOUT_AT_WRITE.add(fig)
    drawn = DRAWN[Path(path).name] = drawn_style(fig)
    if _HELD is not None:
        _HELD[Path(path).name] = (fig, Path(path))
        return drawn
    write_png(fig, path)
    plt.close(fig)
    return drawn

