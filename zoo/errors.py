"""The errors archzoo raises for bad input: each message says what was wrong and what would be right."""
from __future__ import annotations

import argparse
import difflib


class ZooError(ValueError):
    """Bad input to the zoo (a name, a size, an option)."""


class UnknownModelError(ZooError, KeyError):
    def __init__(self, name: str, known: list[str]):
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; closest: {', '.join(close)}" if close else "; see zoo.list_models()"
        super().__init__(f"unknown model {name!r}{hint}")

    __str__ = ValueError.__str__  # KeyError would quote the message


class UnsupportedResolutionError(ZooError):
    pass


class DuplicateModelError(ZooError):
    pass


class UsageError(ZooError):
    """Bad command-line input: reported as one line on stderr, exit status 2, before anything is written."""


class UsageParser(argparse.ArgumentParser):
    """argparse for archzoo's commands: a bad option is a UsageError (one line, exit 2), not argparse's
    usage dump and exit."""

    def error(self, message):
        raise UsageError(message)
