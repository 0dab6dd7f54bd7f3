"""The progress helper: counts items and can be switched off."""

import io

from rich.console import Console

from analysis.progress import progress_tracker


def test_disabled_tracker_is_a_no_op():
    with progress_tracker(total=3, enabled=False) as advance:
        for _ in range(3):
            advance("item")


def test_enabled_tracker_reports_completion_and_latest_item():
    output = io.StringIO()
    console = Console(file=output, force_terminal=False, width=120)
    with progress_tracker(total=2, description="demo", enabled=True, console=console) as advance:
        advance("first")
        advance("second")
    text = output.getvalue()
    assert "demo" in text and "2/2" in text and "second" in text
