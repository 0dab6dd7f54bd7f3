"""Signals during a counting-pool run (issue 34, findings 2, 4 and 10): real processes, real signals, no timing
gaps. A sitecustomize.py gates the counts: the first model counts, every later count waits on a file the test
controls, so "what started after the signal" and "where the process is" are known, not raced."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S


REPO = Path(__file__).resolve().parents[1]
MODELS = ["vit_ti16", "deit_ti", "deit_s", "deit_ti_distilled", "resnet50", "convnext_t", "swin_t", "vit_s16"]
GATE = """
import os, time
if os.environ.get("GATE_DIR"):
    from zoo.runs import parallel, tasks
    gate, real_cost, real_end = os.environ["GATE_DIR"], tasks._cost, parallel._end_workers

    def gated(task):
        with open(os.path.join(gate, "started"), "a") as f:
            f.write(f"{task.request.model} {os.getpid()}\\n")
        while task.request.model != os.environ["GATE_FIRST"] and not os.path.exists(os.path.join(gate, "release")):
            time.sleep(0.05)
        return real_cost(task)

    def stuck_cleanup(workers):
        open(os.path.join(gate, "cleaning"), "w").close()
        time.sleep(600)                       # a cleanup that does not end: the second signal must

    tasks._cost = gated
    if os.environ.get("GATE_STUCK_CLEANUP"):
        parallel._end_workers = stuck_cleanup
"""


@pytest.fixture
def gated(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "sitecustomize.py").write_text(GATE)
    env = {**os.environ, "GATE_DIR": str(gate), "GATE_FIRST": MODELS[0],
           "PYTHONPATH": os.pathsep.join([str(gate), str(REPO)])}

    def start(*extra_env):
        cmd = [sys.executable, "-m", "zoo.compare", "--models", ",".join(MODELS), "--metrics", "cost",
               "--resolutions", "224", "--out", str(tmp_path / "out")]
        started.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        cwd=tmp_path, env={**env, **dict(extra_env)}, start_new_session=True))
        return started[-1]

    started = []
    yield gate, tmp_path / "out" / "results" / "cost.jsonl", start
    for proc in started:           # a command that hung (the bug): its whole process group ended here
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for(check, proc, what: str, timeout: float = HANG_GUARD_S):
    deadline = time.monotonic() + timeout
    while not check():
        assert proc.poll() is None, f"ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.05)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _started(gate: Path) -> list[tuple[str, int]]:
    lines = (gate / "started").read_text().splitlines() if (gate / "started").exists() else []
    return [(line.split()[0], int(line.split()[1])) for line in lines]


@pytest.mark.parametrize("sig, code, said", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                             (signal.SIGINT, 130, "interrupted")])
def test_a_signal_cancels_the_pools_queued_counts_and_keeps_the_counted_rows(gated, sig, code, said):
    """Every count but the first waits: before the fix the workers went on to the queued counts (here they
    would wait forever, the pool's exit-time join with them); now nothing new starts and the command ends."""
    gate, rows, start = gated
    proc = start()
    _wait_for(lambda: len(_rows(rows)) >= 1 and len(_started(gate)) >= 2, proc, "first row")
    started_at_signal = len(_started(gate))
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines()[-1].startswith(f"zoo.compare: {said}")
    assert [r["model"] for r in _rows(rows)] == [MODELS[0]]                  # the counted row is kept
    assert len(_started(gate)) == started_at_signal < len(MODELS)           # nothing started after the signal


def test_a_second_ctrl_c_exits_at_once_while_the_cleanup_is_stuck(gated):
    gate, rows, start = gated
    proc = start(("GATE_STUCK_CLEANUP", "1"))
    _wait_for(lambda: len(_rows(rows)) >= 1, proc, "first row")
    proc.send_signal(signal.SIGINT)
    _wait_for(lambda: (gate / "cleaning").exists(), proc, "cleanup")          # stuck there, as on a busy machine
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines()[-1] == "zoo.compare: interrupted again: exiting now"


def test_a_worker_killed_from_outside_is_reported_as_that_and_the_run_completes(gated):
    gate, rows, start = gated
    proc = start()
    _wait_for(lambda: any(model != MODELS[0] for model, _ in _started(gate)), proc, "a waiting worker")
    worker = next(pid for model, pid in _started(gate) if model != MODELS[0])
    assert worker != proc.pid
    os.kill(worker, signal.SIGTERM)
    (gate / "release").touch()
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, stderr
    assert f"worker {worker} killed by SIGTERM" in stderr and "zoo.compare: terminated" not in stderr
    assert sorted(r["model"] for r in _rows(rows)) == sorted(MODELS)


def test_an_interrupt_leaves_nothing_alive_past_refcounting():
    """A handler that kept its exception in a local made a cycle (exception -> traceback -> handler frame ->
    exception): the interrupted frames, and a suspended counting pool's generator with them, outlived the
    `except`, and at exit the interpreter waited on that pool's workers forever (seen in the test above). gc is
    off here, so only refcounting frees them; the signal is real, to this thread."""
    import gc
    import threading

    from zoo.console.signals import terminate_as_interrupt

    closed = []

    def pool():          # stands for map_ordered: its finally ends the workers
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    def consume(rows):   # the signal lands in the caller's frame, the generator suspended
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    enabled = gc.isenabled()
    gc.disable()
    try:
        with terminate_as_interrupt("test"):
            rows = pool()
            next(rows)
            with pytest.raises(KeyboardInterrupt):
                consume(rows)
            del rows
    finally:
        if enabled:
            gc.enable()
    assert closed == [True]


def test_the_exit_hooks_wakeup_of_a_pool_whose_pipe_was_closed_under_it_is_dropped():
    # the race behind "OSError: Bad file descriptor" after a signal's one-line message, made deterministic: the
    # interpreter's exit hook wakes the pool's manager thread through a pipe that thread has just closed
    import multiprocessing

    from zoo.runs import parallel

    pool = parallel._pool(2, multiprocessing.get_context("spawn"))
    try:
        wakeup = pool._executor_manager_thread_wakeup
        wakeup._writer.close()                        # closed by the manager thread, _closed not yet set
        wakeup.wakeup()                               # what _python_exit calls: before the fix, OSError
    finally:
        pool.shutdown(wait=True)
