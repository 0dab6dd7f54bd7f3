"""zoo.report: built from results/ alone, --check catches stale rows and every stale file, the page renders."""
import re
import os
import json
import shutil
from functools import cache

import pytest
from committed import committed_text
from drawing import draw_afresh
from page_probe import CHROMIUM, probe_page

from zoo.select import answers
from zoo.reference import check, refresh
from zoo.report import build_reports
from zoo.report import deterministic, redraw, tpu_compute
from zoo.report.build import HTML_FILE, MARKDOWN_FILES, PLOT_DATA_FILE, PLOT_FILES
from zoo.store.store import ResultStore
from zoo.runs.tasks import Task, base_row
from analysis.size import Size

SMALL_SET = [Task.named("cost", m, Size.of(s), 1, "fp32", train=True)
             for m, s in (("vit_ti16", 224), ("vit_ti16", 384), ("resnet50", 224), ("swin_t", 224))]
SMALL_QUESTIONS = [("Under 5 GMACs", {"models": "deit_ti,vit_b16", "max_gmacs": "5"})]
# the seeds' TPU pre-training prediction depends on no results/ row (three training steps counted on meta, 9 s on
# the Xeon): refresh() and check() here take the committed file as the fresh prediction. That the committed file is
# what fresh_text() gives is `zoo.report --results . --check`'s concern (.ci/run); these tests are about writing the
# file and catching an edit to it.
TPU_TEXT_ONCE = cache(lambda: committed_text(f"results/{tpu_compute.TPU_FILE}"))


def timed_row(model="vit_ti16", img_size=224, cpu="Test CPU", imgs=50.0, noisy=False, **extra):
    return {**base_row(Task.named("throughput", model, Size.of(img_size))), "family": "vit", "imgs_per_s": imgs,
            "latency_ms_p50": 1000 / imgs, "latency_ms_p90": 21.0, "latency_ms_p99": 22.0, "cv": 0.05, "mfu": 0.2,
            "peak_flops": 2e11, "threads": 2, "ran_batch_size": 1, "noisy": noisy,
            "env": {"cpu_model": cpu, "gpu_name": None}, **extra}


@pytest.fixture(scope="module")
def small_results_once(tmp_path_factory):
    """A results/ folder holding the deterministic rows of a few small models (and the answer to one small
    worked question: the real ones count the whole registry, test_answers.py's concern), plus one timed row:
    counted once for the module, as counting is deterministic."""
    path = tmp_path_factory.mktemp("small_results")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(deterministic, "deterministic_tasks", lambda: SMALL_SET)
        patch.setattr(answers, "QUESTIONS", SMALL_QUESTIONS)
        patch.setattr(tpu_compute, "fresh_text", TPU_TEXT_ONCE)
        assert refresh(path) == len(SMALL_SET)
        assert refresh(path) == 0          # nothing changed, nothing appended
    ResultStore(path).append(timed_row())
    return path


@pytest.fixture
def small_results(small_results_once, tmp_path, monkeypatch):
    """A copy of small_results_once of each test's own."""
    monkeypatch.setattr(deterministic, "deterministic_tasks", lambda: SMALL_SET)
    monkeypatch.setattr(answers, "QUESTIONS", SMALL_QUESTIONS)      # what check() answers afresh
    monkeypatch.setattr(tpu_compute, "fresh_text", TPU_TEXT_ONCE)
    shutil.copytree(small_results_once, tmp_path, dirs_exist_ok=True)
    return tmp_path


def _drawing(monkeypatch) -> list[str]:
    """The names of the figures drawn from now on (each plot saves its figure through style.save), none of them
    taken from what this process drew before (redraw.DRAWN_IN_PROCESS: off)."""
    from zoo.report import style

    draw_afresh(monkeypatch)
    drawn, real_save = [], style.save

    def save(fig, path, **how):
        drawn.append(path.name)
        return real_save(fig, path, **how)

    monkeypatch.setattr(style, "save", save)
    return drawn


def test_reports_are_written_from_results(small_results, monkeypatch):
    from zoo.runs.tasks import run_task

    ResultStore(small_results).append(run_task(Task.named("cost", "vit_ti16", Size.of(224))))  # a later run without train
    written = build_reports(small_results)
    names = {p.name for p in written}
    assert set(MARKDOWN_FILES) | set(PLOT_FILES) | {HTML_FILE, PLOT_DATA_FILE} <= names
    reports = small_results / "reports"
    cost = (reports / "cost.md").read_text()
    lines = [line for line in cost.splitlines() if line.startswith("| vit_ti16 | vit | 224 |")]
    assert len(lines) == 1
    assert lines[0].split("|")[10].strip() != "-"     # train GMACs: the row that counted training is kept
    assert "GMACs / image" in cost and "MiB" in cost and "MB" not in cost.replace("MiB", "")
    assert "Test CPU (2 threads)" in (reports / "throughput.md").read_text()
    accuracy = (reports / "accuracy.md").read_text()
    # timm's results-imagenet.csv: swin_tiny_patch4_window7_224.ms_in1k (timm's default tag) 81.388 at 224,
    # beside the Swin README's 81.2 for the same checkpoint
    row = next(line for line in accuracy.splitlines() if line.startswith("| swin_t | 224 |"))
    assert "| 81.39 | ms_in1k | in1k |" in row and "| 81.20 | ms_in1k (repository) | in1k |" in row
    plotted = json.loads((reports / PLOT_DATA_FILE).read_text())
    assert {row["model"] for row in plotted["macs_vs_resolution.png"]} == {"vit_ti16", "resnet50", "swin_t"}
    # a rebuild draws only the plots whose inputs changed (or whose PNG is gone): every figure goes through
    # style.save, and an unchanged one is neither drawn nor written
    inodes = {name: (reports / name).stat().st_ino for name in PLOT_FILES}     # a PNG is renamed into place
    ResultStore(small_results).append(timed_row(img_size=384, imgs=10.0))       # the throughput plot's data
    (reports / PLOT_FILES[1]).unlink()
    drawn = _drawing(monkeypatch)
    build_reports(small_results)
    redrawn = {name for name in PLOT_FILES if (reports / name).stat().st_ino != inodes[name]}
    assert {"throughput_vs_resolution.png", PLOT_FILES[1]} <= redrawn and PLOT_FILES[0] not in redrawn  # cost: same
    assert set(drawn) == redrawn
    drawn.clear()
    build_reports(small_results)
    assert drawn == []                                                          # nothing changed, nothing drawn
    build_reports(small_results, small_results / "elsewhere")                  # --out: the PNGs proven are copied
    assert drawn == [] and all((small_results / "elsewhere" / name).read_bytes() == (reports / name).read_bytes()
                               for name in PLOT_FILES)
    monkeypatch.setattr(redraw, "code_digest", lambda: "other drawing code")
    build_reports(small_results)
    assert sorted(drawn) == sorted(PLOT_FILES)                                  # new drawing code: all drawn
    bare = small_results / "bare"
    build_reports(small_results, bare, pictures=False)                # --check's rebuild: plots.json, no PNG
    assert not list(bare.glob("*.png"))
    assert json.loads((bare / PLOT_DATA_FILE).read_text()) == json.loads((reports / PLOT_DATA_FILE).read_text())
    # the page draws its figures from plots.json (interactive, no PNG inlined), so it is the same without PNGs
    assert (bare / HTML_FILE).read_text() == (reports / HTML_FILE).read_text()


def test_a_figure_drawn_before_in_this_process_is_reused_as_a_fresh_drawing_would_be(small_results, monkeypatch):
    """The same rows reported into a second folder: nothing is drawn again, and its PNGs and plots.json are,
    byte for byte, what drawing afresh (the reuse off) gives."""
    from zoo.report import style

    monkeypatch.setattr(redraw, "DRAWN_IN_PROCESS", type(redraw.DRAWN_IN_PROCESS)())    # empty, reuse on
    build_reports(small_results, small_results / "first", kept=small_results / "none")
    saved = []
    real_save = style.save
    monkeypatch.setattr(style, "save", lambda fig, path, **how: saved.append(path.name) or real_save(fig, path, **how))
    build_reports(small_results, small_results / "again", kept=small_results / "none")
    assert saved == []
    draw_afresh(monkeypatch)
    build_reports(small_results, small_results / "fresh", kept=small_results / "none")
    assert sorted(saved) == sorted(PLOT_FILES)
    for name in (*PLOT_FILES, PLOT_DATA_FILE):
        assert (small_results / "again" / name).read_bytes() == (small_results / "fresh" / name).read_bytes(), name


def test_h_by_w_cost_rows_are_in_the_cost_table_under_their_label(tmp_path):
    """zoo.compare --resolutions 800x1344 --metrics cost,memory, then zoo.report: the rows are in the cost table."""
    from zoo.runs.tasks import run_task

    rows = [run_task(Task.named("cost", m, Size(64, 96))) for m in ("vit_ti16", "resnet50")]
    for row in rows:
        ResultStore(tmp_path).append(row)
    build_reports(tmp_path, pictures=False)     # tables only
    cost = (tmp_path / "reports" / "cost.md").read_text()
    shown = [line.split(" | ")[:4] for line in cost.splitlines() if "| 64x96 |" in line]
    assert shown == [["| resnet50", "resnet", "64x96", "-"], ["| vit_ti16", "vit", "64x96", str(4 * 6 + 1)]]
    assert "None" not in cost and "64x96" not in (tmp_path / "reports" / "components.md").read_text()


def test_a_same_machine_rerun_replaces_its_row(small_results):
    ResultStore(small_results).append(timed_row(imgs=80.0))                   # same model, settings and machine
    ResultStore(small_results).append(timed_row(imgs=30.0, cpu="Other CPU"))  # another machine: kept beside
    build_reports(small_results, pictures=False)     # tables only
    table = (small_results / "reports" / "throughput.md").read_text()
    test_cpu = [line for line in table.splitlines() if line.startswith("| Test CPU")]
    assert len(test_cpu) == 1 and "| 80.00 |" in test_cpu[0]
    assert any(line.startswith("| Other CPU") for line in table.splitlines())


def test_check_passes_when_current_and_names_what_is_stale(small_results):
    # a whole check(): current; then its report part alone with the report files damaged (results untouched, so
    # each report problem is its own file's); then its counting part alone with the results damaged as well
    build_reports(small_results)
    assert check(small_results) == []
    reports = small_results / "reports"
    (reports / "cost.md").write_text("edited by hand\n")
    html = (reports / HTML_FILE).read_text()
    (reports / HTML_FILE).write_text(html.replace("Cost per model", "Cost per modal"))
    (reports / PLOT_FILES[0]).unlink()
    data = json.loads((reports / PLOT_DATA_FILE).read_text())
    data[PLOT_FILES[1]][0]["attn %"] += 1
    (reports / PLOT_DATA_FILE).write_text(json.dumps(data))
    png = (reports / PLOT_FILES[2]).read_bytes()
    (reports / PLOT_FILES[2]).write_bytes(png[:-40] + bytes([png[-40] ^ 1]) + png[-39:])   # one bit flipped
    shutil.copy(reports / PLOT_FILES[4], reports / PLOT_FILES[3])    # a PNG of other rows: stale
    problems = deterministic.stale_reports(small_results)
    assert any("cost.md is stale" in p for p in problems)
    assert any(f"{HTML_FILE} is stale" in p for p in problems)
    assert any(f"{PLOT_FILES[0]} is missing" in p for p in problems)
    assert any(f"{PLOT_DATA_FILE} is stale" in p for p in problems)
    assert any(f"{PLOT_FILES[2]} is damaged" in p for p in problems)
    assert any(f"{PLOT_FILES[3]} was drawn from other rows" in p for p in problems)
    assert len(problems) == 6, problems
    rows_file = small_results / "results" / "cost.jsonl"
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert (rows[0]["model"], rows[0]["img_size"], rows[2]["model"]) == ("vit_ti16", 224, "resnet50")
    rows[0]["macs"] += 1                  # a committed count that no longer matches the counter
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows[:2] + rows[3:]))    # and one row gone
    predicted_file = small_results / "results" / "predicted.jsonl"   # the classifiers of SMALL_SET, 5 GPUs
    predicted = [json.loads(line) for line in predicted_file.read_text().splitlines()]
    assert {r["model"] for r in predicted} == {"vit_ti16", "resnet50", "swin_t"} and len(predicted) == 3 * 2 * 5
    predicted[0]["imgs_per_s"] += 1       # a committed prediction that no longer matches a fresh one
    predicted_file.write_text("".join(json.dumps(r) + "\n" for r in predicted))
    tpu_file = tpu_compute.tpu_path(small_results)    # the TPU prediction as refresh() wrote it, one figure edited
    tpu_file.write_text(tpu_file.read_text().replace('"epochs": 14', '"epochs": 15', 1))
    problems = deterministic.stale_rows(small_results)
    assert any("vit_ti16 at 224" in p and "macs" in p for p in problems)
    assert any("lacks resnet50 at 224" in p for p in problems)
    assert any("predicted.jsonl" in p and "imgs_per_s" in p for p in problems)
    assert any(f"{tpu_compute.TPU_FILE} differs from a fresh prediction" in p for p in problems)


def test_noisy_rows_are_marked_and_left_out_of_fits(small_results):
    store = ResultStore(small_results)
    store.append(timed_row(img_size=384, imgs=10.0))
    store.append(timed_row(img_size=448, imgs=1.0, noisy=True, cv=0.8))
    build_reports(small_results, pictures=False)     # tables only
    reports = small_results / "reports"
    assert "noisy" in (reports / "throughput.md").read_text()
    scaling = (reports / "scaling.md").read_text()
    assert "vit_ti16 448 px" in scaling                           # named as left out
    row = next(line for line in scaling.splitlines() if line.startswith("| vit_ti16 |"))
    # latency 20 ms at 224 and 100 ms at 384 only: k = log(5) / log(384 / 224)
    import math
    assert f"{math.log(5) / math.log(384 / 224):.2f}" in row


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_html_page_renders_every_table_and_image_without_console_errors(small_results, tmp_path):
    from zoo.report.build import PLACEMENT, sections
    from zoo.report.html import anchor
    from zoo.report.rows import load

    build_reports(small_results)
    probe, console_errors = probe_page(small_results / "reports" / HTML_FILE, tmp_path)
    # the summary's table, one per section that has rows (an empty one is left out with a line), and every table
    # a text section holds (detectors.md's two; the worked questions' shortlists in choosing.md)
    built = sections(load(small_results)).values()
    shown = [s for s in built if hasattr(s, "table") and not s.left_out]
    in_text = sum(len(re.findall(r"^\|[-:| ]+\|$", s.text, re.MULTILINE)) for s in built if hasattr(s, "text"))
    assert in_text >= 3                  # detectors.md's two tables at least, with the worked answers besides
    assert probe["tables"] == 1 + len(shown) + in_text and probe["rows"] > 0
    plotted = json.loads((small_results / "reports" / PLOT_DATA_FILE).read_text())
    # a plot with data sits beside each table it summarises (the Pareto plots in the summary as well), drawn by
    # plotly in the page; the predicted-GPU plots are one figure with a button per device
    places = {anchor(where) for name in PLOT_FILES if plotted[name] for where in PLACEMENT[name]}
    assert places and all(probe["figures_in"][where] >= 1 for where in places), probe["figures_in"]
    assert probe["images"] == 0 and probe["plots"]["drawn"] == probe["plots"]["figures"] >= len(places)
    assert probe["broken"] == 0 and probe["errors"] == [] and console_errors == []
    assert probe["overflowing"] == [] and probe["summary_top"] < 900


def test_the_deterministic_rows_cover_the_sizes_timm_publishes_checkpoints_at():
    """The tests above replace deterministic_tasks by a small set; this is the real list (no counting). timm has
    ViT-Ti/16 checkpoints at 224 and 384 (vit_tiny_patch16_224, vit_tiny_patch16_384): a training cost row each."""
    import timm

    published = sorted(int(m[1]) for name in timm.list_models("vit_tiny_patch16_*")
                       if (m := re.fullmatch(r"vit_tiny_patch16_(\d+)", name)))
    tasks = [t for t in deterministic.deterministic_tasks() if t.request.model == "vit_ti16" and t.kind == "cost"]
    assert sorted(t.request.img_size.hw for t in tasks) == [(s, s) for s in published] == [(224, 224), (384, 384)]
    assert all(t.request.train and t.request.detector is None and t.request.segmenter is None for t in tasks)


def test_a_kept_plots_json_is_read_only_as_a_regular_file(tmp_path):
    # what proves a PNG current is read as every results file is: a link is not followed (it could point at
    # another report's plots.json, whose entries would then pass as this folder's) and a FIFO is not opened
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / PLOT_DATA_FILE).write_text(json.dumps({PLOT_FILES[0]: [1], "style": {PLOT_FILES[0]: {}}}))
    assert redraw.kept_entries(elsewhere, "style", PLOT_FILES) == {PLOT_FILES[0]: [[1], {}]}
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / PLOT_DATA_FILE).symlink_to(elsewhere / PLOT_DATA_FILE)
    assert redraw.kept_entries(linked, "style", PLOT_FILES) == {}
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / PLOT_DATA_FILE)
    assert redraw.kept_entries(fifo, "style", PLOT_FILES) == {}       # returns at once: nothing writes the FIFO
