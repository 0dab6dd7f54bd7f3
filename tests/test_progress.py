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
