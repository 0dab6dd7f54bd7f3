"""Run a command as a user would: `run_cli` starts `python -m <module>` (a subprocess: its exit status, stdout
and stderr); `call_main` calls the same main() in this process and returns the same three, for tests where
the process boundary is not what is tested (no interpreter start, no torch/timm import: seconds each)."""
import contextlib
import importlib
import io
import logging
import os
import subprocess
import sys
import warnings

import torch

HANG_GUARD_S = 1800     # a subprocess's hang guard, never a speed check: a loaded machine may take minutes to start torch

MAINS = {"zoo.compare": "zoo.compare", "zoo.select": "zoo.select", "zoo.report": "zoo.report.__main__",
         "zoo": "zoo.compare"}


def run_cli(module: str, *args: str, cwd=None, timeout: float = HANG_GUARD_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def _to_stderr(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _fresh_warnings():
    """Warnings as a fresh interpreter shows them (on stderr, Python's default filters), not pytest's record."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = _to_stderr
        yield


@contextlib.contextmanager
def _stderr_log(stream):
    """What the command's logging.basicConfig(stream=sys.stderr) shows, into `stream` (pytest already holds
    the root logger's handlers, so basicConfig does nothing in here)."""
    root, handler = logging.getLogger(), logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def call_main(module: str, *args: str, cwd=None, **_) -> subprocess.CompletedProcess:
    """`module`'s main(args) in this process: an exception it lets out fails the test (a user would see a
    traceback); argparse's SystemExit is its status. Working folder and torch's threads are restored."""
    main = importlib.import_module(MAINS[module]).main
    out, err = io.StringIO(), io.StringIO()
    here, threads = os.getcwd(), torch.get_num_threads()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stderr_log(err), \
                _fresh_warnings():
            try:
                code = main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(here)
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess([module, *args], code, out.getvalue(), err.getvalue())
