"""The committed report is what most readers see (issue 35): no section of it says it has no rows, and its
page, built from the committed results/, opens on a summary with a table of contents and fits a 1400 px
window."""
import pathlib
import re

import pytest
from page_probe import CHROMIUM, WINDOW, probe_page

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


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_the_committed_page_opens_on_a_summary_and_fits_a_1400_px_window(tmp_path, committed):
    build_reports(committed, tmp_path / "reports")       # the page the committed results/ give (what CI commits)
    probe, console_errors = probe_page(tmp_path / "reports" / "index.html", tmp_path)
    assert probe["overflowing"] == [] and probe["page_width"] <= WINDOW[0], probe["overflowing"]
    # the first screen: the summary starts on it and its first table (the default three compared) ends on it
    assert probe["summary_top"] < WINDOW[1] and probe["summary_table_bottom"] < WINDOW[1]
    assert probe["toc_links"] >= len(MARKDOWN_FILES) + 1            # every section and the summary
    assert probe["sortable"] >= 2 and probe["filters"] >= 3 and probe["broken"] == 0
    assert probe["filter_ok"] and probe["sort_ok"]       # a family filter keeps only its rows; a click sorts
    assert probe["errors"] == [] and console_errors == []
