"""Render a report page in headless Chromium at a 1400 x 900 window and read back what it laid out: a script
injected into a copy of the page writes a JSON summary into the DOM, which --dump-dom prints."""
import json
import re
import shutil
import subprocess
from pathlib import Path

from cli import HANG_GUARD_S

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
WINDOW = (1400, 900)
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.target.src)), true);
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });    // a folded table must fit too
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
  // the interactive plots as drawn: how many, the smallest text in them, how many side by side, overlapping labels
  const figs = [...document.querySelectorAll('.plotly-figure')], per_row = {}, overlaps = [];
  let min_font = null;
  for (const f of figs) {
    const r = f.getBoundingClientRect(), row = Math.round(r.top + window.scrollY);
    per_row[row] = (per_row[row] || 0) + 1;
    const texts = [...f.querySelectorAll('text')].filter(t => t.textContent.trim() && t.getBBox().width > 0);
    for (const t of texts) {
      const px = parseFloat(getComputedStyle(t).fontSize);
      if (min_font === null || px < min_font) min_font = px;
    }
    const labels = [...f.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .gtitle')]
      .filter(t => t.textContent.trim()).map(t => [t.textContent, t.getBoundingClientRect()]);
    labels.forEach(([a, p], i) => labels.slice(i + 1).forEach(([b, q]) => {
      if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1)
        overlaps.push(f.id + ': ' + a + ' / ' + b);
    }));
  }
  const plots = {figures: figs.length, drawn: figs.filter(f => f.querySelector('.main-svg')).length, min_font,
                 most_side_by_side: Math.max(0, ...Object.values(per_row)), overlaps: overlaps.slice(0, 10)};
  // the answer views' own tables are drawn by their script from the page's JSON (VIEWS_PROBE checks them)
  const figures_in = {};        // section id -> figures drawn in it (an inlined PNG or an interactive plot)
  document.querySelectorAll('section').forEach(s => {
    figures_in[s.id] = s.querySelectorAll('img, .plotly-figure .main-svg:first-child').length; });
  const result = {plots, figures_in, filter_ok, sort_ok, tables: document.querySelectorAll('table:not(.answer-table)').length,
                  rows: document.querySelectorAll('table:not(.answer-table) tbody tr').length,
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
        capture_output=True, text=True, timeout=HANG_GUARD_S)
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    console_errors = [line for line in result.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    return json.loads(found.group(1).replace("&quot;", '"')), console_errors


VIEW_IDS = ("view-gpu", "view-cpu", "view-task")
# For each answer view: where it lies, and whether changing each of its inputs changes the numbers it shows (a number
# input gets 1 where empty, else a quarter of its value; a select its next option). Also any exponent shown.
VIEWS_PROBE = """<script>
window.addEventListener('load', () => {
  const summary = document.getElementById('summary'), views = {};
  for (const id of %(ids)s) {
    const box = document.getElementById(id);
    if (!box) { views[id] = null; continue; }
    const answer = () => box.querySelector('.answer').textContent, inputs = {};
    for (const e of box.querySelectorAll('input, select')) {
      const before = answer(), old = e.value;
      if (e.tagName === 'SELECT') { if (e.options.length < 2) continue; e.selectedIndex = (e.selectedIndex + 1) %% e.options.length; }
      else e.value = e.value === '' ? '1' : String(parseFloat(e.value) / 4);
      e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));
      inputs[e.name] = answer() !== before;
      e.value = old; e.dispatchEvent(new Event('change', {bubbles: true}));
    }
    const r = box.getBoundingClientRect();
    views[id] = {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, inputs,
                 rows: box.querySelectorAll('.answer tbody tr').length, text: answer().slice(0, 400),
                 exponent: /\\d[eE][+-]?\\d/.test(answer())};
  }
  // images per dollar at a typed price: the H100 row's cells at 3.60 $/h (x 3600 / 3.6 = 1000 x img/s)
  const gpu = document.getElementById('view-gpu'), price = gpu && gpu.querySelector('[name="price-H100"]');
  let h100 = null;
  if (price) {
    price.value = '3.6'; price.dispatchEvent(new Event('input', {bubbles: true}));
    const row = [...gpu.querySelectorAll('.answer tbody tr')].find(r => r.cells[0].textContent === 'H100');
    h100 = row ? [...row.cells].map(c => c.textContent) : null;
  }
  const s = summary.getBoundingClientRect();
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({views, h100, summary_bottom: s.bottom + window.scrollY});
  document.body.appendChild(out);
});
</script>""" % {"ids": json.dumps(list(VIEW_IDS))}


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--hide-scrollbars", "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=HANG_GUARD_S)


def probe_views(page: Path, tmp_path: Path) -> dict:
    """The views' positions and inputs (VIEWS_PROBE), and a screenshot of each view as a reader sees it in a
    1400 px window (tmp_path/<view id>.png, cut from one screenshot of the page's top)."""
    from PIL import Image

    probed = tmp_path / "views_probed.html"
    probed.write_text(page.read_text().replace("<head>", "<head>" + VIEWS_PROBE, 1))
    result = _chromium(tmp_path, f"--window-size={WINDOW[0]},{WINDOW[1]}", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    shown = [v for v in probe["views"].values() if v]
    if shown:
        height = int(max(v["bottom"] for v in shown)) + 10
        _chromium(tmp_path, f"--window-size={WINDOW[0]},{height}", f"--screenshot={tmp_path / 'page.png'}", page.as_uri())
        with Image.open(tmp_path / "page.png") as whole:
            for name, v in probe["views"].items():
                if v:
                    whole.crop((0, int(v["top"]), WINDOW[0], int(v["bottom"]))).save(tmp_path / f"{name}.png")
    return probe
