"""Which plots a report draws. Each PNG carries in its text metadata two digests: of what its figure was drawn from
(the plot function's inputs and the source of the drawing code) and of what it shows (its plots.json entry: data
and style). A figure whose PNG holds today's inputs digest and its plots.json entry's digest is not drawn again
(drawing and laying out is most of a report's time): its entry is kept as it was. `zoo.report --check` proves
each committed PNG current the same way (`png_problems`): a PNG drawn from other inputs, or damaged, is named.

NB: matplotlib's version is not in the digest: PNG bytes differ across its versions, what a figure shows does not
(as plots.json, not PNG bytes, is what --check compares), so a new matplotlib does not make every PNG stale.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

from ..store.safe_io import kind_of, read_stored, strict_dumps, strict_loads, write_atomic
from . import predicted_gpu, tables
from .accuracy import accuracy_points
from .rows import ReportRows

PLOT_FILES = ("macs_vs_resolution.png", "attention_share_vs_tokens.png", "throughput_vs_resolution.png",
              "component_shares.png", "accuracy_vs_gmacs.png", "accuracy_vs_throughput.png",
              "roofline_vs_measured.png", "eager_vs_onnxruntime.png", "task_accuracy_vs_gflops.png",
              *predicted_gpu.PLOT_FILES)
PLOT_DATA_FILE = "plots.json"
MAX_PLOT_DATA_BYTES = 64 << 20    # the committed one is about 84 KB; a larger one is not read as proof
MAX_PNG_BYTES = 32 << 20           # the committed ones are under 250 KB
STYLE_KEY = "style"                  # in plots.json, beside each plot's data
INPUTS_KEY = "archzoo-drawn-from"    # PNG tEXt: sha256 of the drawing code and the plot function's inputs
SHOWN_KEY = "archzoo-shows"          # PNG tEXt: sha256 of the figure's plots.json entry (its data, its style)
# the source that decides what a figure shows beyond its inputs (its plot function and everything it calls)
DRAWING_CODE = ("zoo.report.redraw", "zoo.report.plots", "zoo.report.style", "zoo.report.families",
                "zoo.report.roofline", "zoo.report.predicted_gpu", "zoo.report.rows", "zoo.report.mpl_home",
                "analysis.count.closed_form", "analysis.vocab")


# inputs digest -> (the entry as JSON text, the PNG's bytes or None) of the figures this process drew last: the
# same figure asked for again (another folder, a report rebuilt from the same rows) is not drawn again
DRAWN_IN_PROCESS: OrderedDict[str, tuple[str, bytes | None]] = OrderedDict()
DRAWN_IN_PROCESS_MAX = 48      # figures (a report has 14; a PNG is under 250 KB)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 over the source files of DRAWING_CODE (found, not imported: no matplotlib for a digest)."""
    h = hashlib.sha256()
    for name in DRAWING_CODE:
        h.update(name.encode() + b"\0" + Path(importlib.util.find_spec(name).origin).read_bytes())
    return h.hexdigest()


def digest(value) -> str:
    """sha256 of a JSON value, keys sorted (anything JSON lacks by its repr)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


def as_kept(value):
    """`value` as plots.json holds it (non-finite floats null, tuples lists)."""
    return json.loads(strict_dumps(value))


def _roofline_plot(throughput: list[dict], path: Path) -> list[dict]:
    from . import roofline

    return roofline.plot(roofline.frame(throughput), path)


def _call(name: str):
    """The plot function a plan entry names ("module.function" of zoo.report), imported when a figure is drawn."""
    module, function = name.split(".")
    if module == "redraw":
        return globals()[function]
    return getattr(importlib.import_module(f"zoo.report.{module}"), function)


def plan(data: ReportRows, weights: str = "default", pretraining=None) -> dict[str, tuple[str, dict]]:
    """PNG name -> (its plot function, "module.function" in zoo.report, and the function's inputs but the path, by
    name), in PLOT_FILES order."""
    cost = data.square_cost
    points, _ = accuracy_points(cost, data.throughput, weights, pretraining)
    entries = [("plots.macs_vs_resolution", dict(cost=cost)), ("plots.attention_share_vs_tokens", dict(cost=cost)),
               ("plots.throughput_vs_resolution", dict(throughput=data.throughput)),
               ("plots.component_shares", dict(cost=cost, img_size=tables.components_size(cost))),
               ("plots.accuracy_vs", dict(points=points, x="gmacs", xlabel="GMACs per image")),
               ("plots.accuracy_vs", dict(points=points, x="imgs_per_s", xlabel="img/s at batch 1")),
               ("redraw._roofline_plot", dict(throughput=data.throughput)),
               ("plots.eager_vs_onnxruntime", dict(throughput=data.throughput)),
               ("predicted_gpu.task_accuracy_vs_gflops", dict(detectors=data.detectors, segmenters=data.segmenters))]
    entries += [("plots.accuracy_vs", dict(zip(("points", "x", "xlabel"),
                                         predicted_gpu.predicted_inputs(points, data.predicted, device))))
                for device in predicted_gpu.DEVICES]
    return dict(zip(PLOT_FILES, entries))


def drawn_from(png: Path) -> tuple[str, str] | str:
    """(inputs digest, shown digest) a PNG holds, or why it holds none (missing, not a file, damaged)."""
    found = kind_of(png)
    if found:
        return f"is {found}, not a PNG"
    if not png.is_file():
        return "is missing"
    if png.stat().st_size > MAX_PNG_BYTES:
        return f"is larger than {MAX_PNG_BYTES:,} bytes, not a figure of ours"
    from PIL import Image          # matplotlib's own PNG reader

    try:
        with Image.open(png) as image:
            held = dict(image.info)
            image.verify()         # every chunk's CRC: a flipped or cut byte is found
    except Exception as e:         # noqa: BLE001 - Pillow raises many kinds for a damaged file
        return f"is damaged ({type(e).__name__}: {e})"
    if INPUTS_KEY not in held or SHOWN_KEY not in held:
        return "holds no digest of what it was drawn from"
    return held[INPUTS_KEY], held[SHOWN_KEY]


def _stale(held: tuple[str, str] | str, inputs: str) -> str | None:
    """None when `held` (drawn_from's answer for a PNG) is of a whole PNG drawn from `inputs`; else what is wrong."""
    if isinstance(held, str):
        return held
    return None if held[0] == inputs else "was drawn from other rows or other drawing code"


def stale_because(png: Path, inputs: str) -> str | None:
    """None when the PNG at `png` is whole and was drawn from `inputs` (inputs_digest); else what is wrong with it."""
    return _stale(drawn_from(png), inputs)


def why_redraw(png: Path, inputs: str, kept_entry) -> str | None:
    """None when the PNG at `png` was drawn from `inputs` and shows `kept_entry` (plots.json's [data, style] for
    it); else why the figure must be drawn again. The PNG is read and verified once."""
    held = drawn_from(png)
    stale = _stale(held, inputs)
    if stale:
        return stale
    if kept_entry is None or held[1] != digest(list(kept_entry)):
        return "shows other data than plots.json holds for it"
    return None


def kept_entries(folder: Path, style_key: str, names) -> dict:
    """PNG name -> [its data, its style] of the plots.json in `folder` ({} when there is none or it is unreadable)."""
    text, _ = read_stored(folder / PLOT_DATA_FILE, PLOT_DATA_FILE, MAX_PLOT_DATA_BYTES)   # never a FIFO or link
    try:
        kept = strict_loads(text) if text is not None else None
    except ValueError:
        return {}
    styles = kept.get(style_key) if isinstance(kept, dict) else None
    if not isinstance(styles, dict):
        return {}
    return {name: [kept[name], styles[name]] for name in names if name in kept and name in styles}


def inputs_digest(name: str, inputs: dict) -> str:
    """What a PNG was drawn from: the drawing code, which plot it is (two plots drawn from the same rows, such as
    MACs and attention share against size, are told apart: swapped PNGs are stale) and the plot function's inputs."""
    return digest([code_digest(), name, inputs])


def draw(data: ReportRows, out: Path, weights: str = "default", pretraining=None, pictures: bool = True,
         kept: Path | None = None) -> dict:
    """plots.json's content: each plot's data, and under STYLE_KEY what each shows (style.DRAWN). A figure is
    drawn only where no PNG in `out` or in `kept` (the results' own reports/) proves its plots.json entry current
    (why_redraw); its PNG (with both digests) is written into `out` only with `pictures`, one from `kept` copied."""
    folders = list(dict.fromkeys(Path(f) for f in (out, kept) if f is not None))
    before = {folder: kept_entries(folder, STYLE_KEY, PLOT_FILES) for folder in folders}
    shown, styles = {}, {}
    for name, (function, inputs) in plan(data, weights, pretraining).items():
        key = inputs_digest(name, inputs)
        proven = next((f for f in folders if why_redraw(f / name, key, before[f].get(name)) is None), None)
        if proven is None:
            shown[name], styles[name] = _drawn(_call(function), inputs, Path(out) / name, pictures, key)
            continue
        shown[name], styles[name] = before[proven][name]
        if pictures and proven != folders[0]:
            write_atomic(Path(out) / name, (proven / name).read_bytes())
    return {**shown, STYLE_KEY: styles}


def _drawn(function, inputs: dict, png: Path, write: bool, drawn_from: str) -> list:
    """[data, style] of one figure drawn afresh; its PNG written to `png` (with both digests) if `write`. A figure
    this process drew from the same inputs digest (DRAWN_IN_PROCESS) is not drawn again: its entry, and its PNG's
    bytes where it wrote one, are reused."""
    from . import style

    kept = DRAWN_IN_PROCESS.get(drawn_from)
    if kept is not None and (kept[1] is not None or not write):
        DRAWN_IN_PROCESS.move_to_end(drawn_from)
        if write:
            write_atomic(png, kept[1])
        return json.loads(kept[0])
    with style.held_figures() as held:
        style.DRAWN.pop(png.name, None)
        entry = as_kept([function(path=png, **inputs), style.DRAWN.get(png.name)])
        data = None
        if write:
            data = style.write_png(held[png.name][0], png, {INPUTS_KEY: drawn_from, SHOWN_KEY: digest(entry)})
    if DRAWN_IN_PROCESS_MAX:
        DRAWN_IN_PROCESS[drawn_from] = (json.dumps(entry), data)
        while len(DRAWN_IN_PROCESS) > DRAWN_IN_PROCESS_MAX:
            DRAWN_IN_PROCESS.popitem(last=False)
    return entry


def png_problems(data: ReportRows, reports: Path) -> list[str]:
    """zoo.report --check's part for the PNGs: each committed PNG must be whole and hold the digest of what the
    committed rows give its plot function (and of the drawing code)."""
    problems = []
    for name, (_, inputs) in plan(data).items():
        stale = stale_because(reports / name, inputs_digest(name, inputs))
        if stale:          # one drawn from these rows showing other than plots.json: plots.json is what is stale
            problems.append(f"reports/{name} {stale}: regenerate with `python -m zoo.report`")
    return problems
