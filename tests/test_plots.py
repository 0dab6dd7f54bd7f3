"""Every plot, rendered from the committed results/: one colour per family across all plots (plots.json),
each legend lists a family once, no two labels overlap, log axes read as plain numbers, and a model
measured at one size says so in its label."""
import itertools
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from drawing import draw_afresh
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from zoo.report import build, plots, style
from zoo.report.rows import load

PLAIN = re.compile(r"^\d{1,3}(,\d{3})*(\.\d+)?$|^\d+(\.\d+)?$")      # 60, 2, 0.5, 10,000: no 6 x 10^1


@pytest.fixture(autouse=True)
def drawn_afresh(monkeypatch):
    """These tests watch figures being drawn: none is taken from an earlier drawing in this process."""
    draw_afresh(monkeypatch)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, committed):
    """{png name: figure} for every plot of the committed results, and what draw() put into plots.json."""
    figures = {}
    real_save = style.save

    def keep(fig, path, **how):
        figures[Path(path).name] = fig
        return real_save(fig, path, **how)

    with pytest.MonkeyPatch.context() as patch:
        draw_afresh(patch)
        patch.setattr(style, "save", keep)
        plotted = build.draw(load(committed), tmp_path_factory.mktemp("plots"))
    assert set(figures) == set(build.PLOT_FILES), "every plot is saved through style.save"
    assert all(plotted[build.STYLE_KEY][name] is not None for name in build.PLOT_FILES)
    return figures, plotted


def test_one_colour_per_family_across_every_plot(rendered, committed):
    _, plotted = rendered
    kept = json.loads((committed / "reports" / build.PLOT_DATA_FILE).read_text())
    assert plotted[build.STYLE_KEY] == kept[build.STYLE_KEY]          # the committed plots.json is current
    colours = {}
    for name, drawn in kept[build.STYLE_KEY].items():
        for family, seen in drawn["family_colours"].items():
            colours.setdefault(family, set()).update(seen)
    assert {"vit", "deit", "swin", "convnext"} <= set(colours)            # the families the results hold
    assert all(len(seen) == 1 for seen in colours.values()), colours
    assert len({next(iter(seen)) for seen in colours.values()}) == len(colours)   # and no two families share one
    assert {f: next(iter(c)) for f, c in colours.items()} == {f: style.style_of(f)["color"] for f in colours}


def test_every_legend_lists_each_family_once(rendered):
    figures, _ = rendered
    for name, fig in figures.items():
        legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
        for legend in legends:
            texts = [t.get_text() for t in legend.get_texts()]
            assert len(texts) == len(set(texts)), (name, texts)
        if name.startswith("accuracy_vs"):          # many panels, one legend
            assert len(legends) == 1 and not any(ax.get_legend() for ax in fig.axes), name


def test_no_two_labels_overlap(rendered):
    figures, _ = rendered
    counted = 0
    for name, fig in figures.items():
        renderer = FigureCanvasAgg(fig).get_renderer()        # pyplot let go of the figure after saving it
        labels = [t for ax in fig.axes for t in ax.texts if t.get_gid() == style.LABEL_GID]
        for label in labels:
            label.update_positions(renderer)
        boxes = [Text.get_window_extent(label, renderer) for label in labels]    # the text, not its leader line
        counted += len(boxes)
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), (name, a, b)
    assert counted > 40          # the line-end and Pareto-front labels were all placed and checked


def test_log_axes_read_as_plain_numbers(rendered):
    figures, plotted = rendered
    checked = 0
    for name, fig in figures.items():
        for ax in fig.axes:
            for axis in "xy":
                if (ax.get_xscale() if axis == "x" else ax.get_yscale()) != "log":
                    continue
                labels = style.visible_tick_labels(ax, axis)
                assert len(labels) >= 2 and all(PLAIN.match(label) for label in labels), (name, axis, labels)
                checked += 1
    assert checked >= 9
    assert [label for ticks in plotted[build.STYLE_KEY]["macs_vs_resolution.png"]["log_ticks"] for label in ticks
            if label in ("200", "500", "1000")] == ["200", "500", "1000", "200", "500", "1000"]


def _timed_at(model: str, side: int, imgs_per_s: float) -> dict:
    return {"model": model, "family": "vit", "img_size": side, "imgs_per_s": imgs_per_s, "batch_size": 1,
            "settings": {"dtype": "fp32"}, "env": {"cpu_model": "test cpu"}, "threads": 2}


def test_a_model_measured_at_one_size_says_so(tmp_path, monkeypatch):
    figures = {}
    monkeypatch.setattr(style, "save", lambda fig, path: figures.setdefault(Path(path).name, fig))
    plots.throughput_vs_resolution([_timed_at("deit_ti", 224, 60.0), _timed_at("vit_b16", 224, 4.5),
                                    _timed_at("vit_b16", 384, 2.0)], tmp_path / "t.png")
    labels = {t.get_text() for ax in figures["t.png"].axes for t in ax.texts}
    assert labels == {"deit_ti (224 px only)", "vit_b16"}


def test_a_plot_against_side_with_one_side_is_not_drawn(tmp_path):
    """Every timing at 224 px would draw a column of points on an axis from 215 to 235 (issue 44)."""
    rows = [_timed_at("deit_ti", 224, 60.0), _timed_at("vit_b16", 224, 4.5)]
    assert plots.throughput_vs_resolution(rows, tmp_path / "t.png") == []
    assert plots.throughput_vs_resolution(rows + [_timed_at("vit_b16", 384, 2.0)], tmp_path / "t.png") != []


def test_a_nothing_to_plot_figure_is_laid_out_only_for_its_png(tmp_path, monkeypatch):
    """Laying out a figure is most of drawing one that only says "nothing to plot"; a report that writes no
    PNG (zoo.report --check, table-only tests) lays none out, and every PNG written is laid out first."""
    laid_out, real_layout = [], Figure.tight_layout
    monkeypatch.setattr(Figure, "tight_layout", lambda fig, *a, **k: (laid_out.append(fig), real_layout(fig, *a, **k)))
    written, real_write = [], style.write_png
    monkeypatch.setattr(style, "write_png", lambda fig, path, text=None: (written.append(fig), real_write(fig, path, text)))
    empty = load(tmp_path)                                      # no results: every plot says nothing to plot
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    build.draw(empty, tmp_path / "without", pictures=False)
    assert laid_out == [] and written == []
    plotted = build.draw(empty, tmp_path / "with")
    assert all(plotted[name] == [] for name in build.PLOT_FILES)
    assert len(written) == len(build.PLOT_FILES) and laid_out == written      # each once, before its PNG
    default = (plt.rcParams["figure.subplot.left"], plt.rcParams["figure.subplot.right"])
    assert all((fig.subplotpars.left, fig.subplotpars.right) != default for fig in written)  # margins moved


def test_line_end_labels():
    rows = [{"model": "deit_ti", "res": 224, "v": 60.0}, {"model": "vit_b16", "res": 384, "v": 2.0},
            {"model": "vit_b16", "res": 224, "v": 4.5}]
    assert plots.line_end_labels(rows, "res", "v", unit=" px") == [("deit_ti (224 px only)", 224, 60.0),
                                                                   ("vit_b16", 384, 2.0)]


def test_plain_numbers():
    assert [style.plain_number(v) for v in (60, 2, 0.5, 1000, 20000, 0)] == ["60", "2", "0.5", "1000", "20,000", "0"]


def test_the_page_shows_the_same_key(committed):
    page = (committed / "reports" / build.HTML_FILE).read_text()
    for family in style.FAMILIES:
        look = style.FAMILY_STYLE[family]
        assert f'<span style="color:{look["color"]}">{style._GLYPHS[look["marker"]]}</span> {family}' in page


def _timed(model, backend, imgs, machine="Test CPU", **settings):
    return {"model": model, "img_size": 224, "batch_size": 1, "imgs_per_s": imgs, "family": "deit",
            "settings": {"dtype": "fp32", "backend": backend, **settings},
            "env": {"cpu_model": machine, "gpu_name": None}, "threads": 2}


def test_eager_against_onnx_runtime_pairs_rows_and_tolerates_missing_ones(tmp_path):
    from zoo.report.rows import machine_name

    rows = [_timed("deit_ti", "eager", 50.0), _timed("deit_ti", "onnxruntime", 80.0),
            _timed("swin_t", "eager", 10.0),                         # no ONNX Runtime partner: left out
            _timed("resnet50", "onnxruntime", 30.0, train=True)]     # a training step: not inference
    assert len({machine_name(r) for r in rows}) == 1
    drawn = plots.eager_vs_onnxruntime(rows, tmp_path / "pair.png")
    assert drawn == [{"model": "deit_ti", "res": 224, "batch": 1, "dtype": "fp32", "eager img/s": 50.0,
                      "onnxruntime img/s": 80.0}]
    # with no pair (or no rows at all) the figure says so and the page leaves it off
    assert plots.eager_vs_onnxruntime(rows[2:], tmp_path / "none.png") == []
    assert plots.eager_vs_onnxruntime([], tmp_path / "empty.png") == [] and (tmp_path / "empty.png").is_file()
