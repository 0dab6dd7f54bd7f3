"""The page as an answer page (issue 44), without a browser: the rows each answer view embeds, a section without
rows as one line of 'not measured here' (never a heading), a loaded timing marked in the summary, and a stored
zoo.select answer found beside the rows."""
import json
import re

from zoo.report import summary, views
from zoo.report.build import build_reports
from zoo.report.rows import ReportRows


def _timed(model="vit_b16", backend="eager", noisy=False, share=0.0, cv=0.05, imgs=4.0, machine="Test CPU"):
    return {"model": model, "family": "vit", "img_size": 224, "batch_size": 1, "imgs_per_s": imgs,
            "latency_ms_p50": 1000 / imgs, "noisy": noisy, "foreign_cpu_share": share, "cv": cv,
            "settings": {"dtype": "fp32", "backend": backend}, "env": {"cpu_model": machine}, "threads": 2}


def _rows(throughput) -> ReportRows:
    return ReportRows(cost=[], cost_all=[], throughput=throughput, not_measured=[])


def test_a_loaded_timing_is_marked_in_the_summary():
    # the case: 0.21 img/s timed while others used 87% of the CPU, shown unmarked
    table, _ = summary.default_three(_rows([_timed(imgs=0.21, noisy=True, share=0.87)]))
    assert "0.21 (loaded: others used 87% of the CPU)" in table
    table, _ = summary.default_three(_rows([_timed(imgs=0.21, noisy=True, share=0.01, cv=0.4)]))
    assert "0.21 (noisy: cv 0.40)" in table
    table, _ = summary.default_three(_rows([_timed(imgs=4.87)]))
    assert "| 4.87 |" in table and "loaded" not in table


def test_the_cpu_view_keeps_each_machine_and_marks_loaded_rows():
    data = _rows([_timed(), _timed(backend="onnxruntime", noisy=True, share=0.5),
                  _timed(machine="Other CPU"), {**_timed(), "settings": {"dtype": "fp32", "train": True}}])
    rows = views.cpu_rows(data)
    assert len(rows) == 3                                   # the training step is no inference latency
    assert {r["machine"] for r in rows} == {"Test CPU (2 threads)", "Other CPU (2 threads)"}
    loaded = [r for r in rows if r["noisy"]]
    assert [(r["backend"], r["others"]) for r in loaded] == [("onnxruntime", 0.5)]
    # timm's results-imagenet.csv (zoo/models/data/timm_results.csv): vit_base_patch16_224.augreg2_in21k_ft_in1k
    assert rows[0]["ms"] == 250.0 and (rows[0]["top1"], rows[0]["pretraining"]) == (85.108, "in21k")


def test_sections_without_rows_are_lines_of_not_measured_here(tmp_path):
    (tmp_path / "results").mkdir()
    build_reports(tmp_path)
    page = (tmp_path / "reports" / "index.html").read_text()
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert "Throughput, latency and MFU (measured)" not in headings and "Cost per model and resolution" not in headings
    assert headings[-1] == "Not measured here"
    listed = re.search(r'<section id="not-here">(.*?)</section>', page, re.DOTALL).group(1)
    for line in ("Throughput, latency and MFU (measured): no timed rows", "Which GPU and batch: no predicted GPU rows",
                 "Which backbone on this CPU: no timed inference rows"):
        assert line in listed
    assert 'id="view-gpu"' not in page and 'id="view-data"' not in page    # no view without its rows


def test_a_stored_select_answer_is_found(tmp_path, committed):
    results = tmp_path / "results"
    results.mkdir()
    answer = json.loads((committed / "results" / "answers.json").read_text())[0]["answer"]
    (results / "select-answer.json").write_text(json.dumps(answer))
    build_reports(tmp_path)
    page = (tmp_path / "reports" / "index.html").read_text()
    best = answer["shortlist"][0]["model"]
    assert f"Your last measured zoo.select (results/select-answer.json): {best}" in page
    assert "Your last measured zoo.select answer (results/select-answer.json)" in \
        (tmp_path / "reports" / "choosing.md").read_text()
    (results / "select-answer.json").write_text("{not json")
    build_reports(tmp_path)
    page = (tmp_path / "reports" / "index.html").read_text()
    assert "results/select-answer.json is not usable" in page and "Your last measured" not in page


def test_the_page_plots_are_interactive_readable_and_folded(committed):
    """From the committed plots.json: every figure's text at 12 px (the issue's floor: 10), numbers on axes and in
    hover in plain notation (d3 ',.4~r': thousands separated, never an exponent), the five predicted-GPU plots one
    figure with a button per device, and a model's loaded timing hollow."""
    from zoo.report import interactive, page_plots
    from zoo.report.build import CAPTIONS, PLOT_DATA_FILE
    from zoo.report.predicted_gpu import DEVICES, PLOT_FILES

    plotted = json.loads((committed / "reports" / PLOT_DATA_FILE).read_text())
    live = page_plots.figures(plotted, CAPTIONS, {})
    specs = [json.loads(m) for html in live.values()
             for m in re.findall(r'class="plot-spec"[^>]*>(.*?)</script>', html.replace("<\\/", "</"))]
    assert len(specs) >= 10
    for spec in specs:
        layout = spec["layout"]
        assert layout["font"]["size"] >= 10 and layout["title"]["font"]["size"] >= 10
        assert all(layout[a]["tickformat"] == ",.4~r" for a in ("xaxis",) if "tickformat" in layout[a])
        assert all("e" not in t.get("hovertemplate", "").split("%{x:")[-1][:6] for t in spec["data"])
    assert [live[name] == "" for name in PLOT_FILES] == [False] + [True] * (len(PLOT_FILES) - 1)
    buttons = [s for s in specs if s["layout"].get("updatemenus")]
    assert [b["label"] for b in buttons[0]["layout"]["updatemenus"][0]["buttons"]] == list(DEVICES)
    loaded = interactive.lines_by_model([{"model": "m", "res": 224, "v": 1.0, "noisy": True},
                                         {"model": "m", "res": 384, "v": 0.5, "noisy": False}],
                                        ("res", "side"), ("v", "img/s"), lambda p: "vit", "t", flag="noisy")
    assert loaded["data"][0]["text"] == ["m (loaded)", "m"]
    assert loaded["data"][0]["marker"]["symbol"] == ["circle-open", "circle"]


def test_the_check_compares_the_page_without_plotlys_own_script():
    from zoo.report.html import without_images
    from zoo.report.interactive import LIBRARY_ID

    page = f'<img src="data:image/png;base64,AAAA"><script id="{LIBRARY_ID}">/* plotly.js 9.9 */</script><p>1</p>'
    assert without_images(page) == f'<img src="data:image/png;base64,"><script id="{LIBRARY_ID}"></script><p>1</p>'


def test_a_partial_answer_is_never_called_no_model_qualifies():
    """Issue 54: zoo.select stopped by its budget (exit 3) before any model was decided kept an answer with an empty
    shortlist; the page's summary called it 'no model qualifies'."""
    question = "Under 5 ms on this CPU?"
    stopped = {"shortlist": [], "excluded": [], "undecided": [{"model": "vit_b16"}],
               "untimed": [{"model": "deit_s"}, {"model": "swin_t"}],
               "timing": {"partial": {"reason": "budget spent (--budget-s)", "status": 3}}}
    whole = {"shortlist": [], "excluded": [{"model": "vit_b16"}], "undecided": [], "untimed": [], "timing": None}
    best = {"model": "deit_s", "top1": 79.9, "weights_label": "default", "pretraining": "in1k", "gmacs": 4.6}
    interrupted = {**stopped, "shortlist": [best], "timing": {"partial": {"reason": "interrupted (Ctrl-C)"}}}
    lines = summary.answer_lines([{"question": question, "answer": a} for a in (stopped, whole, interrupted)])
    assert lines == [f"{question}: no model decided yet (partial answer: budget spent (--budget-s); 3 model(s) left "
                     "undecided or untimed)",
                     f"{question}: no model qualifies",
                     f"{question}: deit_s, top-1 79.9% (default, in1k), 4.60 GMACs (partial answer: interrupted "
                     "(Ctrl-C))"]


def test_the_summary_shows_no_accuracy_heading_without_its_plots():
    """Issue 54: a report without accuracy rows showed the heading 'Accuracy against cost' over nothing."""
    from zoo.report.html import summary_html

    filled = {"built": "b", "three_note": "n", "three": "| a |\n|---|\n| 1 |\n", "answers": []}
    assert "Accuracy against cost" not in summary_html(filled, {}, [])
    assert "Accuracy against cost" in summary_html(filled, {}, ["<figure></figure>"])
