"""`zoo.select` interrupted inside `import torch` (issue 42, defect 1): real processes, a real SIGINT/SIGTERM sent by
the process to itself at the moment a torch submodule starts importing (a sitecustomize.py import hook, so the
moment is known, not raced), and a budget that runs out at once. Never a traceback, exit 134 or 139."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

REPO = Path(__file__).resolve().parents[1]
HOOK = """
import os, signal, sys
class _Interrupt:
    fired = False
    def find_spec(self, name, path=None, target=None):
        if not self.fired and name == os.environ["INTERRUPT_AT_IMPORT"]:
            self.fired = True
            os.kill(os.getpid(), getattr(signal, os.environ["INTERRUPT_SIGNAL"]))
        return None
sys.meta_path.insert(0, _Interrupt())
"""
SELECT = ["-m", "zoo.select", "--models", "deit_ti,resnet50", "--max-latency-ms", "2000", "--device", "cpu",
          "--quick", "--format", "json"]


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """A user cache holding both models' counts (one counting run): the run under test then first imports torch
    where it times, inside the code that catches interrupts, as a second run on a machine does."""
    cache = tmp_path_factory.mktemp("cache")
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "zoo.select", "--models", "deit_ti,resnet50", "--max-gmacs", "100",
                    "--no-save"], capture_output=True, env=env, check=True, timeout=HANG_GUARD_S)
    return cache


def _select(tmp_path, *args, **env):
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)]), **env}
    return subprocess.run([sys.executable, *SELECT, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=HANG_GUARD_S)


@pytest.mark.parametrize("module, signal_name, status", [("torch.nn", "SIGINT", 130), ("torch._C", "SIGTERM", 143)])
def test_an_interrupt_inside_import_torch_exits_with_its_status_and_one_line(tmp_path, counted, module, signal_name,
                                                                             status):
    done = _select(tmp_path, "--out", str(tmp_path / "out"), INTERRUPT_AT_IMPORT=module, INTERRUPT_SIGNAL=signal_name,
                   ARCHZOO_CACHE_DIR=str(counted))
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("zoo.select: ")
    if "no answer" not in done.stderr:      # interrupted where it times (not while counting): the answer so far
        answer = json.loads(done.stdout)
        assert answer["timing"]["partial"]["status"] == status and len(answer["untimed"]) == 2
        assert json.loads((tmp_path / "out" / "results" / "select-answer.json").read_text())["timing"]["partial"]


def test_a_budget_spent_at_once_gives_the_partial_answer_printed_and_kept(tmp_path, counted):
    done = _select(tmp_path, "--budget-s", "1e-9", "--out", str(tmp_path / "out"), INTERRUPT_AT_IMPORT="-",
                   INTERRUPT_SIGNAL="SIGINT", ARCHZOO_CACHE_DIR=str(counted))
    assert done.returncode == 3, done.stderr
    answer = json.loads(done.stdout)
    assert answer["timing"]["partial"]["status"] == 3 and {u["model"] for u in answer["untimed"]} == {"deit_ti",
                                                                                                       "resnet50"}
    kept = json.loads((tmp_path / "out" / "results" / "select-answer.json").read_text())
    assert kept["timing"]["partial"] == answer["timing"]["partial"]
