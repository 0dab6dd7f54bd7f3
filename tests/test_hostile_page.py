"""Issue 54: no text a row carries runs as code in any report writer. Rows whose device, datasheet source, band and
machine name are a script payload (it breaks out of an attribute with a quote, opens a tag with an inline handler,
and opens an HTML comment inside the page's embedded JSON) give a page, markdown reports and answer views that show
the payload as text: found without a browser by parsing the page, and in headless Chromium by running it (those
tests skip, naming chromium, where it is missing)."""
import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from page_probe import CHROMIUM

from cli import HANG_GUARD_S
from zoo.report.build import MARKDOWN_FILES, build_reports

# what the payload does where it runs: marks the document, which the probe reads back
RUNS = "document.documentElement.setAttribute('data-injected',1)"
PAYLOAD = f'X"><img src=x onerror="{RUNS}"><!--<script>'
MODEL = "vit_b16"        # the GPU view opens on it: its answer shows the hostile device at once


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def hostile(committed, tmp_path_factory) -> Path:
    """A results folder of the committed vit_b16 rows, its texts made hostile, and the reports built from it."""
    folder = tmp_path_factory.mktemp("hostile")
    results = folder / "results"
    results.mkdir()
    for kind in ("cost", "throughput"):
        _write(results / f"{kind}.jsonl", [r for r in _rows(committed / "results" / f"{kind}.jsonl")
                                           if r["model"] == MODEL and not r["settings"].get("detector")])
    for timed in (rows := _rows(results / "throughput.jsonl")):
        timed["env"]["cpu_model"] = PAYLOAD
    _write(results / "throughput.jsonl", rows)
    predicted = [r for r in _rows(committed / "results" / "predicted.jsonl") if r["model"] == MODEL]
    for r in predicted:
        if r["device"] == "H100":
            r.update(device=PAYLOAD, source=PAYLOAD, band_from=PAYLOAD, calibration_source=PAYLOAD)
    _write(results / "predicted.jsonl", predicted)
    build_reports(folder, pictures=False)
    return folder / "reports"


class _Elements(HTMLParser):
    """Every element's tag and attributes, as an HTML parser (and so a browser) reads them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def _injected(page: str) -> list[str]:
    """Elements the payload made: an inline handler, or an <img> whose source is its `x`."""
    parser = _Elements()
    parser.feed(page)
    return [f"<{tag} {attrs}>" for tag, attrs in parser.found
            if any(name.startswith("on") for name in attrs) or (tag == "img" and attrs.get("src") == "x")]


def _markdown_as_html(reports: Path) -> str:
    """The markdown reports as a CommonMark viewer shows them (raw HTML passed through, as GitHub's renderer
    and most editors' previews read it before any sanitising)."""
    markdown_it = pytest.importorskip("markdown_it")
    converter = markdown_it.MarkdownIt("commonmark")
    return "".join(converter.render((reports / name).read_text(encoding="utf-8")) for name in MARKDOWN_FILES)


def test_the_payload_reaches_every_writer(hostile):
    """The rows' texts are in what is tested: the page's sections and views, the markdown's table and footnotes."""
    page = (hostile / "index.html").read_text(encoding="utf-8")
    markdown = (hostile / "predicted_gpu.md").read_text(encoding="utf-8")
    assert 'id="view-gpu"' in page and 'id="view-cpu"' in page
    assert page.count("X&quot;&gt;&lt;img src=x") >= 3          # in a label, an attribute, a table cell
    assert markdown.count("&lt;img src=x") >= 2                  # the table's device cell and its footnote


def test_no_writer_makes_an_element_of_a_rows_text(hostile):
    assert _injected("<p><img src=x onerror=f()></p>") and _injected('<b x=""><i onclick="f()">')  # the finder finds
    assert _injected((hostile / "index.html").read_text(encoding="utf-8")) == []
    assert _injected(_markdown_as_html(hostile)) == []


PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => { if (e.message) window.__errors.push(String(e.message)); }, true);
window.addEventListener('load', () => setTimeout(() => {
  const views = {};
  document.querySelectorAll('section.view').forEach(v => {
    views[v.id] = [v.querySelectorAll('.answer tbody tr').length, v.querySelector('.answer').textContent]; });
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({injected: document.documentElement.hasAttribute('data-injected'), views,
                                    errors: window.__errors});
  document.body.appendChild(out);
}, 200));
</script>"""


def _run_in_chromium(html_text: str, tmp_path: Path) -> dict:
    """What the probe saw after the page loaded in headless Chromium (its own handlers and scripts ran)."""
    page = tmp_path / "page.html"
    page.write_text(html_text.replace("<head>", "<head>" + PROBE, 1) if "<head>" in html_text else
                    f"<!doctype html><html><head><meta charset='utf-8'>{PROBE}</head><body>{html_text}</body></html>")
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=HANG_GUARD_S)
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install "
                                                               "chromium): the payload is not run")


@needs_chromium
def test_the_probe_sees_a_payload_that_runs(tmp_path):
    assert _run_in_chromium(f"<p>{PAYLOAD}</p>", tmp_path)["injected"]


@needs_chromium
def test_the_page_and_its_views_run_no_rows_text(hostile, tmp_path):
    """The HTML writer and the views' script: nothing injected, no script error, and every view answers (a quote
    in a device name once made the views' input lookup throw, blanking the GPU and CPU views)."""
    probe = _run_in_chromium((hostile / "index.html").read_text(encoding="utf-8"), tmp_path)
    assert not probe["injected"] and probe["errors"] == []
    (gpu_rows, _), (_, cpu_text) = probe["views"]["view-gpu"], probe["views"]["view-cpu"]
    assert gpu_rows == 5 and "timed rows under the target" in cpu_text, probe["views"]     # five devices


@needs_chromium
def test_the_markdown_runs_no_rows_text(hostile, tmp_path):
    assert not _run_in_chromium(_markdown_as_html(hostile), tmp_path)["injected"]


def test_json_in_the_page_cannot_end_or_swallow_its_script_element():
    from zoo.report.escaping import json_for_script

    text = json_for_script({"device": PAYLOAD + "</script>"})
    assert "</" not in text and "<!--" not in text and json.loads(text) == {"device": PAYLOAD + "</script>"}
