"""Render a report page in headless Chromium at a 1400 x 900 window and read back what it laid out: a script
injected into a copy of the page writes a JSON summary into the DOM, which --dump-dom prints."""
import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
WINDOW = (1400, 900)
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.target.src)), true);
window.addEventListener('load', () => {
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length;
  const overflowing = [];
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.right > %(width)d + 0.5) overflowing.push(e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(r.right));
  }
  const summary = document.getElementById('summary');
  const first = summary ? summary.querySelector('table') : null;
  // filter the first filterable table by the first family it lists, then sort it by its third column
  let filter_ok = null, sort_ok = null;
  const box = document.querySelector('.filters');
  if (box) {
    const t = document.getElementById(box.dataset.for), pick = box.querySelector('select[name=family]');
    pick.value = pick.options[1].value; box.dispatchEvent(new Event('change'));
    const shown = [...t.tBodies[0].rows].filter(r => !r.hidden);
    filter_ok = shown.length > 0 && shown.length < t.tBodies[0].rows.length
                && shown.every(r => r.dataset.family === pick.value);
    pick.value = ''; box.dispatchEvent(new Event('change'));
    t.querySelectorAll('th')[2].click();
    const values = [...t.tBodies[0].rows].map(r => parseFloat(r.cells[2].textContent.replace(/,/g, '')))
                                         .filter(v => !isNaN(v));
    sort_ok = values.length > 1 && values.every((v, i) => i === 0 || values[i - 1] <= v);
  }
  const result = {filter_ok, sort_ok, tables: document.querySelectorAll('table').length,
                  rows: document.querySelectorAll('tbody tr').length,
                  images: document.images.length, broken, errors: window.__errors,
                  overflowing: overflowing.slice(0, 20), page_width: document.documentElement.scrollWidth,
                  summary_top: summary ? summary.getBoundingClientRect().top : null,
                  summary_table_bottom: first ? first.getBoundingClientRect().bottom : null,
                  toc_links: document.querySelectorAll('nav.toc a').length,
                  sortable: document.querySelectorAll('table.sortable').length,
                  filters: document.querySelectorAll('.filters select').length};
  const out = document.createElement('pre'); out.id = 'probe'; out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>""" % {"width": WINDOW[0]}


def probe_page(page: Path, tmp_path: Path) -> tuple[dict, list[str]]:
    """(the probe's JSON, the console's error lines) for the page rendered at WINDOW."""
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("<head>", "<head>" + PROBE, 1))
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    console_errors = [line for line in result.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    return json.loads(found.group(1).replace("&quot;", '"')), console_errors
