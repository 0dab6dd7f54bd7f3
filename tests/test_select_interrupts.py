"""`zoo.select` interrupted inside `import torch` (issue 42, defect 1): real processes, a real SIGINT/SIGTERM sent by
the process to itself at the moment a torch submodule starts importing (a sitecustomize.py import hook, so the
moment is known, not raced), and a budget that runs out at once. Never a traceback, exit 134 or 139."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, call_main

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
def counted(tmp_path_factory, keep_peaks_in):
    """A user cache holding both models' counts (one counting run): the run under test then first imports torch
    where it times, inside the code that catches interrupts, as a second run on a machine does. It holds the
    session's GEMM peak and bandwidth too (conftest.py): a timed run probes nothing."""
    cache = tmp_path_factory.mktemp("cache")
    keep_peaks_in(cache)
    with pytest.MonkeyPatch.context() as patch:     # the counting run in this process: it is not what is tested
        patch.setenv("ARCHZOO_CACHE_DIR", str(cache))
        done = call_main("zoo.select", "--models", "deit_ti,resnet50", "--max-gmacs", "100", "--no-save")
    assert done.returncode == 0, done.stderr
    assert len(list((cache / "count").glob("*.json"))) == 2, "both counts kept (user_cache: <namespace>/<sha>.json)"
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
    answer = json.loads(done.stdout)       # wherever it lands, counting or timing: the answer so far
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


# Gates for the tests below (issue 42: "interrupting zoo.select at any moment gives exit 3, 130 or 143 with the
# partial answer printed and kept"; defect 5). Each sends or waits for a real signal at a known moment.
GATES = """
import os, signal, threading, time, weakref
gate, mode = os.environ.get("GATE_DIR"), os.environ.get("GATE_MODE")
def note(line):
    with open(os.path.join(gate, "log"), "a") as f:
        f.write(line + "\\n")
def to_myself(name):      # a real signal, to the main thread: its handler runs before the call returns
    signal.pthread_kill(threading.main_thread().ident, getattr(signal, name))
if mode == "counting":    # the first model counts, the second waits forever: the signal comes while it waits
    from zoo.runs import scheduler, tasks
    real_cost, real_record = tasks._cost, scheduler.Schedule.record
    def gated(task):
        note(f"started {task.request.model}")
        while task.request.model != os.environ["GATE_FIRST"]:
            time.sleep(0.05)
        return real_cost(task)
    def record(self, task, row):
        real_record(self, task, row)
        note(f"recorded {task.request.model}")
    tasks._cost, scheduler.Schedule.record = gated, record
if mode == "finalizer":   # Ctrl-C lands inside a finalizer (as in the memory tracker's) as the first timing starts
    from zoo.runs import tasks
    real_run = tasks.run_task
    class Freed:
        pass
    def fire():
        to_myself("SIGINT")
        for _ in range(1000):
            pass
    def run_task(task, macs=None, peak=None):
        if task.kind == "throughput" and not os.path.exists(os.path.join(gate, "fired")):
            open(os.path.join(gate, "fired"), "w").close()
            freed = Freed()
            weakref.finalize(freed, fire)
            del freed
        return real_run(task, macs, peak)
    tasks.run_task = run_task
if mode == "printing":    # SIGTERM once the answer is settled, as it is kept and printed
    from zoo.select import cli
    real_store = cli._store_answer
    def store(result, q):
        to_myself("SIGTERM")
        return real_store(result, q)
    cli._store_answer = store
"""


def _gated(tmp_path, mode: str, *args, **env):
    gate = tmp_path / "gate"
    gate.mkdir(exist_ok=True)
    (gate / "sitecustomize.py").write_text(GATES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(gate), str(REPO)]), "GATE_DIR": str(gate),
           "GATE_MODE": mode, **env}
    return gate, subprocess.Popen([sys.executable, "-m", "zoo.select", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True)


def _ended(proc) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:         # the hang guard: its whole group ended
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("sig, status, said", [(signal.SIGINT, 130, "interrupted (Ctrl-C)"),
                                               (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_an_interrupt_while_counting_gives_the_partial_answer_printed_and_kept(tmp_path, sig, status, said):
    """Before the fix: one line, "no answer", nothing kept. A cold user cache, so both models are counted."""
    out = tmp_path / "out"
    gate, proc = _gated(tmp_path, "counting", "--models", "vit_ti16,deit_ti", "--max-latency-ms", "2000",
                        "--device", "cpu", "--quick", "--format", "json", "--out", str(out),
                        GATE_FIRST="vit_ti16", ARCHZOO_CACHE_DIR=str(tmp_path / "cache"))
    log = gate / "log"
    deadline = time.monotonic() + HANG_GUARD_S
    while not (log.exists() and {"recorded vit_ti16", "started deit_ti"} <= set(log.read_text().splitlines())):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = _ended(proc)
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines()[-1] == f"zoo.select: {said} while counting: the answer so far follows"
    answer = json.loads(stdout)
    assert answer["timing"]["partial"] == {"reason": f"{said} while counting", "status": status}
    assert {u["model"]: u["reason"] for u in answer["untimed"]} == {
        "vit_ti16": f"untimed: {said} while counting (counted, not timed)",
        "deit_ti": f"untimed: {said} while counting (not counted)"}
    assert json.loads((out / "results" / "select-answer.json").read_text()) == answer


def test_a_ctrl_c_inside_a_finalizer_is_not_lost(tmp_path, counted):
    """Defect 5: Python drops an exception raised in a finalizer ("Exception ignored"); the Ctrl-C was lost and the
    run timed on to exit 0. Now it is raised again outside it: the first model untimed, the answer partial."""
    out = tmp_path / "out"
    _, proc = _gated(tmp_path, "finalizer", *SELECT[2:], "--out", str(out), ARCHZOO_CACHE_DIR=str(counted))
    stdout, stderr = _ended(proc)
    assert proc.returncode == 130, stderr
    assert "Exception ignored" not in stderr and "Traceback" not in stderr
    answer = json.loads(stdout)
    assert answer["timing"]["partial"]["status"] == 130 and answer["timing"]["timed"] == 0
    assert [u["reason"] for u in answer["untimed"]] == ["untimed: interrupted (Ctrl-C) while timing it",
                                                        "untimed: interrupted (Ctrl-C)"]
    assert json.loads((out / "results" / "select-answer.json").read_text()) == answer


def test_a_signal_once_the_answer_is_settled_still_prints_it(tmp_path, counted):
    """Before the fix the SIGTERM escaped main() as the answer was kept: exit 143 and nothing printed."""
    _, proc = _gated(tmp_path, "printing", "--models", "deit_ti,resnet50", "--max-gmacs", "100", "--no-save",
                     "--format", "json", ARCHZOO_CACHE_DIR=str(counted))
    stdout, stderr = _ended(proc)
    assert proc.returncode == 143, stderr
    assert [r["model"] for r in json.loads(stdout)["shortlist"]] == ["resnet50", "deit_ti"]
    assert stderr.strip().splitlines()[-1] == ("zoo.select: terminated (SIGTERM) once the answer was settled: it is "
                                               "printed and kept whole")
