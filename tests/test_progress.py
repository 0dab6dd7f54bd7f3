"""The progress helper: counts items and can be switched off."""

import io

from rich.console import Console

from zoo.console.progress import progress_tracker


def test_disabled_tracker_prints_nothing(capsys):
    with progress_tracker(total=3, enabled=False) as advance:
        for _ in range(3):
            advance("item")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_enabled_tracker_reports_completion_and_latest_item():
    output = io.StringIO()
    console = Console(file=output, force_terminal=False, width=120)
    with progress_tracker(total=2, description="demo", enabled=True, console=console) as advance:
        advance("first")
        advance("second")
    text = output.getvalue()
    assert "demo" in text and "2/2" in text and "second" in text


def test_plain_lines_with_eta_when_not_a_terminal(capsys):
    with progress_tracker(total=2, description="demo") as advance:  # pytest's stderr is not a terminal
        advance("first")
        advance("second")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("demo [1/2]") and "ETA" in lines[0] and lines[0].endswith("first")
    assert lines[1].startswith("demo [2/2]") and "ETA 0s" in lines[1]


def test_the_eta_is_the_linear_estimate(capsys, monkeypatch):
    """A clock at 0 s (start), then 10 s and 15 s: after 1 of 4 items in 10 s, 3 left take 3 x 10 = 30 s; after 2
    in 15 s, 2 x 7.5 = 15 s."""
    import types

    import zoo.console.progress
    clock = iter([0.0, 10.0, 15.0])
    monkeypatch.setattr(zoo.console.progress, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    with progress_tracker(total=4, description="demo") as advance:
        advance("a")
        advance("b")
    lines = capsys.readouterr().err.splitlines()
    assert "10s elapsed, ETA 30s" in lines[0] and "15s elapsed, ETA 15s" in lines[1]
