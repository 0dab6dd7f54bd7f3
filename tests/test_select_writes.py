"""`zoo.select`'s answer beside the store (issue 42, defect 4): a folder in the way is refused before any work, and a
full disk loses no answer (it is printed, one line says it was not kept). A seeded fake timer, real files."""
import errno
import json
import os

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
    import zoo.runs.safe_io

    timer = FakeTimer({"deit_ti": 8.0})
    _fake(monkeypatch, timer)
    real = zoo.runs.safe_io.write_atomic

    def full(path, data):
        if str(path).endswith("select-answer.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)
    monkeypatch.setattr(zoo.runs.safe_io, "write_atomic", full)
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
