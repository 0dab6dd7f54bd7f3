"""The committed report is what most readers see (issue 35): no section of it says it has no rows, and its
page, built from the committed results/, opens on a summary with a table of contents and fits a 1400 px
window."""
import json
import pathlib
import re

import pytest
from page_probe import CHROMIUM, VIEW_IDS, WINDOW, probe_page, probe_views

from zoo.report.build import MARKDOWN_FILES, Section, build_reports

EMPTY = re.compile(r"\bno\b[^.\n]*\brows\b|nothing to plot|^Left out:", re.IGNORECASE | re.MULTILINE)


def empty_sections(folder: pathlib.Path) -> list[str]:
    """'file: line' for every report section that says it has no rows, or shows a table without any."""
    found = []
    for name in MARKDOWN_FILES:
        text = (folder / name).read_text(encoding="utf-8")
        found += [f"{name}: {m.group(0)}" for m in EMPTY.finditer(text)]
        for table in re.findall(r"(?:^\|.*\n)+", text, re.MULTILINE):
            if len(table.splitlines()) <= 2:
                found.append(f"{name}: a table with a header and no rows")
    return found


def test_the_check_finds_an_empty_section(tmp_path):
    for name in MARKDOWN_FILES:
        (tmp_path / name).write_text("# x\n\n| a |\n|---|\n| 1 |\n")
    assert empty_sections(tmp_path) == []
    (tmp_path / "detection.md").write_text("# x\n\nNB: no H x W or feature-extractor cost rows in results/\n")
    (tmp_path / "cost.md").write_text("# x\n\n| a |\n|---|\n")
    (tmp_path / "roofline.md").write_text(Section("Roofline", "intro", "| a |\n|---|\n",
                                                  ["no timed eager inference rows with a roofline estimate"]).markdown())
    assert sorted({f.split(":")[0] for f in empty_sections(tmp_path)}) == ["cost.md", "detection.md", "roofline.md"]


def test_no_committed_section_says_it_has_no_rows(committed):
    assert empty_sections(committed / "reports") == []


@pytest.fixture(scope="module")
def page(tmp_path_factory, committed) -> pathlib.Path:
    """The page the committed results/ give (what CI commits), built once for this module."""
    out = tmp_path_factory.mktemp("reports")
    build_reports(committed, out)
    return out / "index.html"


EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+\b")     # 1.216e+04, 3e5; not a hash's 546ed4


def test_no_table_cell_of_the_page_is_in_scientific_notation(page):
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", page.read_text(encoding="utf-8"), re.DOTALL)
    assert len(cells) > 1000
    assert [c for c in cells if EXPONENT.search(re.sub(r"<[^>]+>", "", c))] == []
    assert EXPONENT.search("<td>1.216e+04</td>") and not EXPONENT.search("@5c33776aa59f0f05bfb8008ff546ed4c")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_the_answer_views_follow_the_summary_and_their_inputs_change_the_numbers(page, tmp_path, committed):
    """Issue 44: each view within the first two screens below the summary, every input of it working offline (the
    page fetches nothing), no exponent in what it shows; a screenshot of each at 1400 px (tmp_path/<id>.png)."""
    from PIL import Image

    probe = probe_views(page, tmp_path)
    for view in VIEW_IDS:
        found = probe["views"][view]
        assert found is not None, view
        assert found["top"] >= probe["summary_bottom"] and found["bottom"] <= probe["summary_bottom"] + 2 * WINDOW[1]
        assert found["rows"] > 0 and not found["exponent"], (view, found["text"])
        assert found["inputs"] and all(found["inputs"].values()), (view, found["inputs"])
        with Image.open(tmp_path / f"{view}.png") as shot:
            assert shot.width == WINDOW[0] and len(set(shot.convert("L").getdata())) > 16    # drawn, not blank
    assert {"model", "target", "price-H100"} <= set(probe["views"]["view-gpu"]["inputs"])
    # the page opens on vit_b16 with a 50 ms target: the H100's best batch is the fastest batch that fits under it,
    # and 3.60 $/h buys 3600 / 3.6 = 1000 seconds of it
    predicted = [json.loads(line) for line in (committed / "results" / "predicted.jsonl").read_text().splitlines()]
    best = max((r for r in predicted if r["model"] == "vit_b16" and r["device"] == "H100" and r["fits_memory"]
                and r["latency_ms"] <= 50), key=lambda r: r["imgs_per_s"])
    cells = probe["h100"]
    assert cells[1] == str(best["batch_size"])
    per_dollar = float(cells[6].split(" ")[0].replace(",", ""))
    assert per_dollar == round(1000 * best["imgs_per_s"])          # 6,537,753 for 6,537.75333 img/s


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_the_committed_page_opens_on_a_summary_and_fits_a_1400_px_window(tmp_path, page):
    probe, console_errors = probe_page(page, tmp_path)
    assert probe["overflowing"] == [] and probe["page_width"] <= WINDOW[0], probe["overflowing"]
    # the first screen: the summary starts on it and its first table (the default three compared) ends on it
    assert probe["summary_top"] < WINDOW[1] and probe["summary_table_bottom"] < WINDOW[1]
    assert probe["toc_links"] >= len(MARKDOWN_FILES) + 1            # every section and the summary
    assert probe["sortable"] >= 2 and probe["filters"] >= 3 and probe["broken"] == 0
    assert probe["filter_ok"] and probe["sort_ok"]       # a family filter keeps only its rows; a click sorts
    assert probe["errors"] == [] and console_errors == []
    # every plot drawn by plotly, read at 1400 px: text of at least 10 px, at most three side by side, no two axis
    # labels or titles overlapping
    plots = probe["plots"]
    assert plots["figures"] >= 10 and plots["drawn"] == plots["figures"] and probe["images"] == 0
    assert plots["min_font"] >= 10 and plots["most_side_by_side"] <= 3 and plots["overlaps"] == [], plots
