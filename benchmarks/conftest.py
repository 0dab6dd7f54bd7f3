"""Shared pieces of the benchmark suite: the device, and a summary of side-by-side ratios at the end."""

import pytest

from analysis.vocab import resolve_device

RATIO_LINES: list[str] = []


@pytest.fixture(scope="session")
def device():
    return resolve_device("auto")


@pytest.fixture(scope="session")
def report_ratio():
    """Call report_ratio(text) to have a line printed in the terminal summary."""
    return RATIO_LINES.append


def pytest_terminal_summary(terminalreporter):
    if RATIO_LINES:
        terminalreporter.section("archzoo side-by-side ratios")
        for line in RATIO_LINES:
            terminalreporter.write_line(line)
