"""Ctrl-C and SIGTERM while a command imports (issue 54): before its main() runs, and inside an import main() makes.
Real processes and real signals, sent by the process to itself at the moment a named module starts importing (a
sitecustomize.py import hook: the moment is known, not raced). Never a traceback, a lost signal, an abort or a
half-imported module: one line, 130 or 143."""
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

from zoo.console.signals import terminate_as_interrupt

REPO = Path(__file__).resolve().parents[1]
HOOK = """
import os, signal, sys
class _Interrupt:
    fired = set()
    def find_spec(self, name, path=None, target=None):
        if name not in self.fired and name in os.environ["INTERRUPT_AT_IMPORT"].split(","):
            self.fired.add(name)
            os.kill(os.getpid(), getattr(signal, os.environ["INTERRUPT_SIGNAL"]))
        return None
sys.meta_path.insert(0, _Interrupt())
"""
SAID = {"SIGINT": ("interrupted (Ctrl-C)", 130), "SIGTERM": ("terminated (SIGTERM)", 143)}
ARGS = {"zoo": ["--models", "deit_ti", "--metrics", "cost"], "zoo.compare": ["--models", "deit_ti", "--metrics", "cost"],
        "zoo.select": ["--models", "deit_ti", "--max-gmacs", "5"], "zoo.report": ["--results", str(REPO)]}
PROG = {"zoo": "zoo.compare", "zoo.compare": "zoo.compare", "zoo.select": "zoo.select", "zoo.report": "zoo.report"}
# numpy's C extension (numpy 2: numpy._core; 1.x: numpy.core), which torch and pandas import
NUMPY_C = "numpy._core._multiarray_umath" if importlib.util.find_spec("numpy._core") else \
    "numpy.core._multiarray_umath"


def _run(tmp_path, module: str, at: str, sig: str, *extra: str):
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    out = ["--out", str(tmp_path / "out")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)]), "INTERRUPT_AT_IMPORT": at,
           "INTERRUPT_SIGNAL": sig, "ARCHZOO_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", module, *ARGS[module], *out, *extra], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=HANG_GUARD_S)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("module", ["zoo", "zoo.compare", "zoo.select", "zoo.report"])
def test_a_signal_during_start_up_imports_is_one_line_and_its_status(tmp_path, module, sig):
    """zoo.options is imported by every command before its main() runs: before the fix a Ctrl-C there was a
    traceback and a SIGTERM ended the process with no line (the shell's -15)."""
    done = _run(tmp_path, module, "zoo.options", sig)
    said, status = SAID[sig]
    assert done.returncode == status, done.stderr
    assert done.stderr == f"{PROG[module]}: {said} while starting: nothing done\n" and done.stdout == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("module, sig", [("zoo.compare", "SIGINT"), ("zoo.select", "SIGTERM"),
                                         ("zoo.report", "SIGINT")])
def test_a_signal_inside_numpys_import_is_neither_lost_nor_a_traceback(tmp_path, module, sig):
    """Inside main(), as torch (compare, select) or pandas (report) imports numpy's C extension: before the fix
    torch's import swallowed the KeyboardInterrupt and the command ran on to exit 0, and the report's was a
    traceback. Held until the import is done, it is raised there: one line, the signal's status."""
    done = _run(tmp_path, module, NUMPY_C, sig, "--no-save" if module != "zoo.report" else "--no-cache")
    said, status = SAID[sig]
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and "more than once" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith(f"{PROG[module]}: ")


def test_a_second_signal_while_one_is_held_exits_at_once(tmp_path):
    """numpy's C extension, then numpy.linalg, both inside torch's import: the second one ends the command."""
    done = _run(tmp_path, "zoo.compare", f"{NUMPY_C},numpy.linalg", "SIGINT", "--no-save")
    assert done.returncode == 130, done.stderr
    assert done.stderr == "zoo.compare: interrupted again: exiting now\n"


def test_a_signal_inside_an_import_is_raised_once_the_module_is_whole(tmp_path, monkeypatch):
    """The module imported is finished (its last line ran, it is in sys.modules), then the signal is raised where
    the main thread is next, outside any import."""
    (tmp_path / "signalled_while_imported.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nWHOLE = sum(range(100_000)) > 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    waited = []
    with terminate_as_interrupt("test"):
        with pytest.raises(KeyboardInterrupt):
            import signalled_while_imported  # noqa: F401
            deadline = time.monotonic() + HANG_GUARD_S
            while time.monotonic() < deadline:
                waited.append(1)
                time.sleep(0.01)
    assert sys.modules["signalled_while_imported"].WHOLE and waited
    monkeypatch.delitem(sys.modules, "signalled_while_imported")
