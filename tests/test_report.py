"""zoo.report: built from results/ alone, --check catches stale rows and reports, the page renders."""
import json
import re
import shutil
import subprocess

import pytest

from zoo.report import build_reports, check, refresh
from zoo.report import deterministic
from zoo.report.build import MARKDOWN_FILES, PLOT_FILES
from zoo.store import ResultStore
from zoo.tasks import Task

SMALL_SET = [Task("cost", m, s, 1, "fp32", train=True)
             for m, s in (("vit_ti16", 224), ("vit_ti16", 384), ("resnet50", 224), ("swin_t", 224))]


@pytest.fixture
def small_results(tmp_path, monkeypatch):
    """A results/ folder holding the deterministic rows of a few small models, plus one timed row."""
    monkeypatch.setattr(deterministic, "deterministic_tasks", lambda: SMALL_SET)
    assert refresh(tmp_path) == len(SMALL_SET)
    assert refresh(tmp_path) == 0          # nothing changed, nothing appended
    timed = {"schema": 1, "kind": "throughput", "model": "vit_ti16", "img_size": 224, "batch_size": 1,
             "settings": Task("throughput", "vit_ti16", 224).settings, "software": {}, "imgs_per_s": 50.0,
             "latency_ms_p50": 20.0, "latency_ms_p90": 21.0, "latency_ms_p99": 22.0, "cv": 0.05, "mfu": 0.2,
             "peak_flops": 2e11, "env": {"cpu_model": "Test CPU", "threads": 2, "gpu_name": None}}
    ResultStore(tmp_path).append(timed)
    return tmp_path


def test_reports_are_written_from_results(small_results):
    from zoo.tasks import run_task

    ResultStore(small_results).append(run_task(Task("cost", "vit_ti16", 224)))  # a later run without train
    written = build_reports(small_results)
    names = {p.name for p in written}
    assert set(MARKDOWN_FILES) | set(PLOT_FILES) | {"index.html"} <= names
    reports = small_results / "reports"
    lines = [line for line in (reports / "cost.md").read_text().splitlines() if line.startswith("| vit_ti16 | vit | 224 |")]
    assert len(lines) == 1
    assert lines[0].split("|")[10].strip() != "-"     # train GMACs: the row that counted training is kept
    assert "Test CPU (2 threads)" in (reports / "throughput.md").read_text()
    accuracy = (reports / "accuracy.md").read_text()
    assert "swin_t" in accuracy and "81.30" in accuracy


def test_check_passes_when_current_and_names_what_is_stale(small_results):
    build_reports(small_results)
    assert check(small_results) == []
    (small_results / "reports" / "cost.md").write_text("edited by hand\n")
    assert any("cost.md is stale" in p for p in check(small_results))
    build_reports(small_results)
    rows_file = small_results / "results" / "cost.jsonl"
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    rows[0]["macs"] += 1                  # a committed count that no longer matches the counter
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert any("vit_ti16 at 224" in p and "macs" in p for p in check(small_results))
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows[1:]))
    assert any("lacks vit_ti16 at 224" in p for p in check(small_results))


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.target.src)), true);
window.addEventListener('load', () => {
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length;
  const result = {tables: document.querySelectorAll('table').length,
                  rows: document.querySelectorAll('tbody tr').length,
                  images: document.images.length, broken, errors: window.__errors};
  const out = document.createElement('pre'); out.id = 'probe'; out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_html_page_renders_every_table_and_image_without_console_errors(small_results, tmp_path):
    build_reports(small_results)
    page = (small_results / "reports" / "index.html").read_text()
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1))
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    assert probe["tables"] == len(MARKDOWN_FILES) and probe["rows"] > 0
    assert probe["images"] == len(PLOT_FILES) and probe["broken"] == 0 and probe["errors"] == []
    console_errors = [line for line in result.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    assert console_errors == []
