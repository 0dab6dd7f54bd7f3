"""Issue 54: `zoo.report --check` reads the committed reports as results/ are read (regular files only, bounded,
UTF-8; zoo.store.safe_io.read_stored): a FIFO in reports/ is named, never opened (it hung --check), a link is
named, never followed (to /dev/zero it read without end); and each PNG's digest records which plot it is, so two
swapped PNGs are stale (drawn from the same rows, MACs and attention share against size were told apart by
nothing)."""
import os
import shutil
import threading

import pytest

from committed import extract_committed
from zoo.report import deterministic
from zoo.report.redraw import png_problems
from zoo.report.rows import load


@pytest.fixture
def reports_copy(tmp_path):
    """results/ and reports/ as committed, in a folder of the test's own (it damages them)."""
    return extract_committed(tmp_path / "checkout")


def _open_for_writing_in_the_background(fifo) -> threading.Event:
    """Set once anything opened `fifo` for reading (a writer's open blocks until then): the FIFO was read."""
    opened = threading.Event()

    def write():
        with open(fifo, "wb") as f:
            opened.set()
            f.write(b"x")

    threading.Thread(target=write, daemon=True).start()
    return opened


def _release(fifo) -> None:
    """Open the FIFO's reading end (without blocking) so that the background writer ends."""
    try:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_check_names_a_fifo_a_link_a_file_too_large_or_not_utf8_and_reads_none(reports_copy, monkeypatch):
    reports = reports_copy / "reports"
    os.unlink(reports / "cost.md")
    os.mkfifo(reports / "cost.md")
    opened = _open_for_writing_in_the_background(reports / "cost.md")
    shutil.move(reports / "components.md", reports_copy / "components.md")
    os.symlink(reports_copy / "components.md", reports / "components.md")     # the same bytes, behind a link
    (reports / "attention.md").write_bytes((reports / "attention.md").read_bytes() + b"\xff\n")
    monkeypatch.setattr(deterministic, "MAX_REPORT_BYTES", 1 << 20)             # index.html is about 5 MB
    try:
        problems = deterministic.stale_reports(reports_copy)
        read = opened.is_set()
    finally:
        _release(reports / "cost.md")
    assert not read, "the FIFO was opened"
    assert sorted(problems) == sorted([
        "reports/cost.md is a FIFO, not a regular file", "reports/components.md is a symlink, not a regular file",
        "reports/attention.md is not usable (not UTF-8)",
        "reports/index.html is not usable (larger than 1,048,576 bytes)"]), problems


def test_check_names_two_swapped_pngs(reports_copy):
    data, reports = load(reports_copy), reports_copy / "reports"
    assert png_problems(data, reports) == []                      # the committed PNGs are current
    first, second = reports / "macs_vs_resolution.png", reports / "attention_share_vs_tokens.png"
    shutil.move(first, reports / "swap.png")
    shutil.move(second, first)
    shutil.move(reports / "swap.png", second)
    problems = png_problems(data, reports)
    assert [p.split(" ")[0] for p in problems] == ["reports/macs_vs_resolution.png",
                                                   "reports/attention_share_vs_tokens.png"], problems
    assert all("was drawn from other rows or other drawing code" in p for p in problems)
