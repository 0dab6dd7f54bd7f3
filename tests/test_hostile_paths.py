"""Paths no folder can have (issue 54): a name longer than the file system takes (255 bytes), a symlink loop, an
empty path, in --out, --results or $ARCHZOO_DATA_DIR. Before: a traceback (OSError: File name too long;
RuntimeError: Symlink loop), or the current folder for an empty --out. Now one line naming what the user typed,
exit 2, nothing written."""
from pathlib import Path

import pytest
from cli import call_main

REPO = Path(__file__).resolve().parents[1]

LONG = "a" * 256          # one byte past NAME_MAX of ext4, xfs, btrfs, tmpfs and APFS
COMMANDS = {
    "compare": ("zoo.compare", ["--models", "deit_ti", "--metrics", "cost"], "--out"),
    "select, timed": ("zoo.select", ["--models", "deit_ti", "--max-latency-ms", "50"], "--out"),
    "select, counted": ("zoo.select", ["--models", "deit_ti", "--max-gmacs", "5"], "--out"),
    "select --answers": ("zoo.select", ["--answers"], "--out"),
    "report's results": ("zoo.report", [], "--results"),
    "report's out": ("zoo.report", ["--results", str(REPO)], "--out"),
}


def _bad_paths(tmp_path) -> dict:
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    return {"a long name": str(tmp_path / LONG), "a long name under a missing folder": str(tmp_path / "new" / LONG),
            "a symlink loop": str(tmp_path / "loop_a"), "a folder under a loop": str(tmp_path / "loop_a" / "out"),
            "a path past 4,096 bytes": str(tmp_path.joinpath(*["b" * 200] * 25))}


def _files(tmp_path) -> set:
    return {str(p) for p in tmp_path.rglob("*")}


SAID = {"a long name": "255 bytes", "a long name under a missing folder": "255 bytes",
        "a symlink loop": "symlink loop", "a folder under a loop": "symlink loop",
        "a path past 4,096 bytes": "File name too long"}


@pytest.mark.parametrize("kind", list(SAID))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_path_no_folder_can_have_is_one_line_and_exit_2(tmp_path, monkeypatch, command, kind):
    module, args, option = COMMANDS[command]
    path = _bad_paths(tmp_path)[kind]
    before = _files(tmp_path)
    monkeypatch.setenv("ARCHZOO_CACHE_DIR", str(tmp_path / "cache"))
    done = call_main(module, *args, option, path, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and f"error: {option}: " in done.stderr, done.stderr
    assert SAID[kind] in done.stderr and len(done.stderr) < 300
    assert _files(tmp_path) - before <= {str(tmp_path / "cache")}


@pytest.mark.parametrize("kind", ["a long name", "a symlink loop"])
@pytest.mark.parametrize("command", ["compare", "select, timed", "report's results"])
def test_the_data_folder_variable_is_named_when_its_path_is_no_folder(tmp_path, monkeypatch, command, kind):
    module, args, option = COMMANDS[command]
    monkeypatch.setenv("ARCHZOO_DATA_DIR", _bad_paths(tmp_path)[kind])
    before = _files(tmp_path)
    done = call_main(module, *args, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "error: $ARCHZOO_DATA_DIR: " in done.stderr and _files(tmp_path) == before


@pytest.mark.parametrize("command", ["compare", "select, counted", "report's results", "report's out"])
def test_an_empty_path_is_refused_not_taken_for_the_current_folder(tmp_path, command):
    module, args, option = COMMANDS[command]
    done = call_main(module, *args, option, "", cwd=tmp_path)
    assert done.returncode == 2 and f"error: {option}: an empty path" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []
