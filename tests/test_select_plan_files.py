"""`zoo.select --from-plan FILE` trusts nothing in FILE (issue 42, defect 2) and `--save-plan FILE` writes it whole,
never through a link (defect 3): real files, FIFOs, links and /dev/full; every refusal is exit 2 and one line,
found before anything is counted or timed."""
import json
import os
from pathlib import Path

import pytest

from zoo.select.cli import main

PLAN_QUERY = ["--models", "deit_ti", "--max-latency-ms", "2000", "--device", "cpu"]


@pytest.fixture
def plan(tmp_path, capsys) -> dict:
    path = tmp_path / "good.json"
    assert main([*PLAN_QUERY, "--save-plan", str(path)]) == 0
    capsys.readouterr()
    return json.loads(path.read_text())


@pytest.fixture
def no_timing(monkeypatch):
    """Any timing at all fails the test: every refusal comes before it."""
    import zoo.select.timing

    def refuse(*args, **kwargs):
        raise AssertionError("timed before the plan was checked")
    monkeypatch.setattr(zoo.select.timing, "time_candidates", refuse)


def _refused(path, capsys, *extra) -> str:
    code = main(["--from-plan", str(path), "--no-save", *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("zoo.select: error: --from-plan: "), err
    return err


def test_a_deeply_nested_plan_is_refused(tmp_path, capsys, no_timing):
    path = tmp_path / "plan.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested deeper than" in _refused(path, capsys)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path, capsys, no_timing):
    path = tmp_path / "plan.json"
    os.mkfifo(path)
    assert "is not a regular file" in _refused(path, capsys)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="/dev/zero")
def test_a_link_to_dev_zero_is_refused_without_reading_it(tmp_path, capsys, no_timing):
    path = tmp_path / "plan.json"
    path.symlink_to("/dev/zero")
    assert "is not a regular file" in _refused(path, capsys)


def test_an_oversized_plan_is_refused_unread(tmp_path, capsys, no_timing):
    from zoo.select.plan import MAX_PLAN_BYTES

    path = tmp_path / "plan.json"
    with open(path, "wb") as f:
        f.truncate(MAX_PLAN_BYTES + 1)
    assert f"over {MAX_PLAN_BYTES:,}" in _refused(path, capsys)


@pytest.mark.parametrize("damage, said", [
    (lambda p: p.update(candidates=[1]), "candidates must be model names"),
    (lambda p: p["query"].update(resolution="big"), "the query has no resolution"),
    (lambda p: p["query"].update(models=7, batch_size=[1]), "its query is not one zoo.select asks"),
    (lambda p: p["query"].pop("resolution"), "the query has no resolution"),
    (lambda p: p.update(screened_out=[{"model": 3}]), "screened_out must list"),
    (lambda p: p.update(screened_out="deit_s"), "screened_out must list"),
    (lambda p: p["query"].update(max_latency_ms="fast"), "--max-latency-ms"),
])
def test_a_plan_of_the_wrong_shape_is_refused_before_timing(tmp_path, capsys, plan, no_timing, damage, said):
    damage(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    err = main(["--from-plan", str(path), "--no-save"]), capsys.readouterr().err
    assert err[0] == 2 and said in err[1] and len(err[1].strip().splitlines()) == 1, err


def test_a_key_given_twice_is_refused(tmp_path, capsys, plan, no_timing):
    # json keeps the last of two "candidates": the plan would time a model it excluded
    text = json.dumps(plan)
    text = text.replace('"candidates": ["deit_ti"]', '"candidates": ["deit_ti"], "candidates": ["vit_b16"]')
    path = tmp_path / "plan.json"
    path.write_text(text)
    assert "appears twice" in _refused(path, capsys)


def _save(path, capsys, *extra) -> tuple[int, str]:
    code = main([*PLAN_QUERY, "--save-plan", str(path), *extra])
    return code, capsys.readouterr().err


def test_save_plan_never_writes_through_a_link(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "plan.json"
    link.symlink_to(victim)
    code, err = _save(link, capsys)
    assert code == 2 and "is a symlink, not a regular file" in err and victim.read_text() == "keep me"
    assert link.is_symlink()


@pytest.mark.parametrize("make, said", [(lambda p: p.mkdir(), "is a folder"), (lambda p: os.mkfifo(p), "is a FIFO")])
def test_save_plan_refuses_a_folder_or_a_fifo_unblocked(tmp_path, capsys, make, said):
    path = tmp_path / "plan.json"
    make(path)
    code, err = _save(path, capsys)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full")
def test_save_plan_on_dev_full_is_refused_in_one_line(capsys):
    code, err = _save("/dev/full", capsys)
    assert code == 2 and "is a device file" in err and len(err.strip().splitlines()) == 1


def test_save_plan_on_a_full_disk_keeps_the_old_file_and_says_so(tmp_path, capsys, monkeypatch):
    # the disk fills while the temporary file is written (ENOSPC from the write, as on /dev/full)
    import errno

    path = tmp_path / "plan.json"
    path.write_text("old plan")
    real_fdopen = os.fdopen

    def full(fd, *args, **kwargs):
        f = real_fdopen(fd, *args, **kwargs)
        f.write = lambda data: (_ for _ in ()).throw(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        return f
    monkeypatch.setattr(os, "fdopen", full)
    code, err = _save(path, capsys)
    monkeypatch.undo()
    assert code == 1 and err == f"zoo.select: error: cannot write {path}: No space left on device\n"
    assert path.read_text() == "old plan" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_save_plan_with_no_save_writes_nothing(tmp_path, capsys):
    path = tmp_path / "plan.json"
    code, err = _save(path, capsys, "--no-save")
    assert code == 2 and "drop one" in err and not path.exists()
