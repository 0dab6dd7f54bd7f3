"""`zoo.select`'s answer beside the store (issue 42, defect 4): a folder in the way is refused before any work, and a
full disk loses no answer (it is printed, one line says it was not kept). A seeded fake timer, real files."""
import errno
import json
import os

import pytest

from test_select_settle import FakeTimer

from zoo.select.cli import main

ASK = ["--models", "deit_ti", "--max-latency-ms", "30", "--device", "cpu", "--format", "json"]


def _fake(monkeypatch, timer):
    import zoo.select.timing

    monkeypatch.setattr(zoo.select.timing, "_default_timing", lambda q, store, saving: timer.timing())


def test_a_folder_at_the_answer_is_refused_before_timing(tmp_path, capsys, monkeypatch):
    timer = FakeTimer({"deit_ti": 8.0})
    _fake(monkeypatch, timer)
    (tmp_path / "results" / "select-answer.json").mkdir(parents=True)
    assert main([*ASK, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "select-answer.json is a folder, not a regular file" in err and timer.timed == []


def test_a_full_disk_prints_the_answer_and_says_it_was_not_kept(tmp_path, capsys, monkeypatch):
    import zoo.store.safe_io

    timer = FakeTimer({"deit_ti": 8.0})
    _fake(monkeypatch, timer)
    real = zoo.store.safe_io.write_atomic

    def full(path, data):
        if str(path).endswith("select-answer.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)
    monkeypatch.setattr(zoo.store.safe_io, "write_atomic", full)
    assert main([*ASK, "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert [r["model"] for r in json.loads(captured.out)["shortlist"]] == ["deit_ti"]
    assert "cannot keep the answer in " in captured.err and "No space left on device; it is printed" in captured.err
    assert not (tmp_path / "results" / "select-answer.json").exists()


def test_the_report_on_a_full_disk_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    import zoo.report.build
    from zoo.report.__main__ import main as report

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "reports" / "choosing.md"))
        yield
    monkeypatch.setattr(zoo.report.build, "build_reports", full)
    (tmp_path / "results").mkdir()
    assert report(["--results", str(tmp_path), "--out", str(tmp_path / "reports")]) == 1
    err = capsys.readouterr().err
    assert err == f"zoo.report: error: cannot write {tmp_path / 'reports' / 'choosing.md'}: No space left on device\n"


@pytest.mark.parametrize("no_cache", [False, True])
def test_the_reports_matplotlib_writes_nothing_in_the_home_folder(tmp_path, no_cache):
    """matplotlib's font cache went to ~/.cache/matplotlib and ~/.config (issue 42, defect 8): a fresh process with
    its own HOME imports the report's plots and builds the font list, as zoo.report does."""
    import subprocess
    import sys
    from pathlib import Path

    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), ARCHZOO_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    if no_cache:
        env["ARCHZOO_NO_CACHE"] = "1"
    code = "import zoo.report.plots, matplotlib.font_manager as fm; fm.findfont('DejaVu Sans'); import matplotlib; print(matplotlib.get_cachedir())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert list(home.iterdir()) == []
    if no_cache:
        assert not Path(done.stdout.strip()).exists()            # the temporary folder is gone at exit
    else:
        assert done.stdout.strip() == str(cache / "matplotlib") and any((cache / "matplotlib").glob("fontlist*"))
