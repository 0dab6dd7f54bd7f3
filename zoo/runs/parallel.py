"""Counting many models on the machine's cores: cost tasks run in a process pool and come back in the
order asked for (the scheduler's cost tasks: zoo.compare's and zoo.select's). Counting is
deterministic and on the meta device, so processes cannot disturb each other's numbers (timed tasks
never run here: they must not share the hardware).

Workers are forked from this process when it runs one thread (they start at once, torch imported);
with other threads alive (a progress bar) a fork could inherit a held lock, so they come from a
forkserver instead. Each worker reads and writes the user cache as this process would: archzoo's settings
in the environment ($ARCHZOO_CACHE_DIR, $ARCHZOO_NO_CACHE (`--no-cache`), ...; PASSED_ENV) are passed with each
task as they are now, never inherited through a forkserver's older environment (a notebook that points
$ARCHZOO_CACHE_DIR elsewhere between two calls has its second call's counts kept there).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterator, Optional, Sequence

from analysis.timing.fingerprint import available_cores

from .count_cache import is_cached
from ..store.run_logs import environment

log = logging.getLogger("zoo.runs")
PR_SET_PDEATHSIG = 1    # linux/prctl.h
MIN_PARALLEL = 2      # fewer tasks than this run here: a pool costs more than it saves
# Imported once by the forkserver, so each worker forked from it starts with them: timm as well, which every
# timm-built model needs and whose import (torchvision's, torch._dynamo's) took each worker 2 s a pool, every pool
FORKSERVER_PRELOAD = ["zoo.runs.tasks", "analysis.count.cost", "timm"]
PASSED_ENV = ("XDG_CACHE_HOME", "XDG_DATA_HOME")    # and every ARCHZOO_* variable: settings a task reads


def _context():
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver" if sys.platform != "win32" else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(FORKSERVER_PRELOAD)
    return context


def _die_with_parent(parent: int) -> None:
    """Pool worker start-up: on Linux, be killed when the process that started it dies (SIGKILL, the
    out-of-memory killer), instead of waiting on the pool's pipe forever. Ctrl-C (sent to the whole process
    group) is the command's to handle: a worker ignores it and is ended by the command; a SIGTERM sent to a
    worker ends that worker (not a Terminated the command would take for its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent and os.getppid() != parent:       # it died before the line above took effect
        os._exit(1)


def settings() -> dict[str, str | None]:
    """archzoo's settings in this process's environment as they are now: every $ARCHZOO_* variable set, and
    PASSED_ENV's (None: unset, so a worker that inherited one unsets it)."""
    passed = {k: os.environ.get(k) for k in PASSED_ENV}
    return {**passed, **{k: v for k, v in os.environ.items() if k.startswith("ARCHZOO_")}}


def _call(fn: Callable, env: dict[str, str | None], item):
    """fn(item) in a worker, with the caller's settings: a worker's own ARCHZOO_* variables the caller no longer
    has are unset for the call."""
    stale = {k: None for k in os.environ if k.startswith("ARCHZOO_") and k not in env}
    with environment({**stale, **env}):
        return fn(item)


def map_ordered(fn: Callable, items: Sequence, workers: Optional[int] = None) -> Iterator:
    """fn(item) for each item, in order, on up to `workers` processes (the available cores). Should the pool
    break (a worker killed for memory, a script that cannot be re-imported by a forkserver), the items it
    left unfinished run here instead."""
    n = max(1, min(len(items), workers or available_cores()))
    if n < 2 or len(items) < MIN_PARALLEL:
        yield from map(fn, items)
        return
    call = functools.partial(_call, fn, settings())
    context = _context()
    pool = _pool(n, context)
    finished = False
    try:
        futures = [pool.submit(call, item) for item in items]
        spawned = {p.pid: p for p in _workers(pool)}    # NB: a broken pool may forget them before we ask
        broken = False
        for item, future in zip(items, futures):
            try:
                yield future.result()
            except BrokenProcessPool as e:
                if not broken:
                    seen = {**spawned, **{p.pid: p for p in _workers(pool)}}
                    # the pool's manager thread reaps its workers (their exit codes) as it winds the broken pool
                    # down; asking before it has would find a dead worker's code unknown, so wait for it first
                    pool.shutdown(wait=True)
                    log.warning("a counting worker ended abruptly (%s; %s); counting the rest in this process",
                                _how_workers_ended(list(seen.values())), e)
                broken = True
                yield fn(item)
        pool.shutdown(wait=True)
        finished = True
    finally:
        if not finished:     # a signal (or the caller stopped reading): nothing new starts, running counts end
            workers = _workers(pool)       # NB: before shutdown(), which forgets them
            pool.shutdown(wait=False, cancel_futures=True)
            _end_workers(workers)
            _end_manager(pool)


def _pool(n: int, context) -> ProcessPoolExecutor:
    """A pool of `n` workers that die with this process, and whose wake-up pipe the interpreter's exit hook can
    never raise on. In Python 3.11 that hook (concurrent.futures.process._python_exit) writes to the pipe without a
    lock (one came with CPython gh-125451), so when the pool's manager thread closed it at the same moment, as
    after a signal, the exit printed "OSError: Bad file descriptor" after the one-line message. A write to a pipe
    being closed is a wake-up nobody is left to read, so it is dropped: on every path, a generator finalised late
    included, not only where _end_manager runs."""
    pool = ProcessPoolExecutor(n, mp_context=context, initializer=_die_with_parent,
                               initargs=(os.getpid() if context.get_start_method() == "fork" else 0,))
    wakeup = getattr(pool, "_executor_manager_thread_wakeup", None)      # NB: the executor's own (private) pipe
    if wakeup is not None:
        send = wakeup.wakeup

        def wake() -> None:
            with contextlib.suppress(OSError):
                send()

        wakeup.wakeup = wake
    return pool


def _workers(pool: ProcessPoolExecutor) -> list:
    return list((getattr(pool, "_processes", None) or {}).values())     # NB: the executor's own (private) table


def _how_workers_ended(workers: list) -> str:
    """'worker <pid> killed by SIGTERM' for each worker that died of a signal; what else ended them otherwise."""
    ended = [(p.pid, p.exitcode) for p in workers if p.exitcode]
    names = {-sig.value: sig.name for sig in signal.Signals}
    said = [f"worker {pid} killed by {names.get(code, f'signal {-code}')}" if code < 0 else f"worker {pid} exited {code}"
            for pid, code in ended]
    return ", ".join(said) or "a worker was killed from outside or for memory"


def _end_workers(workers: list) -> None:
    """Kill the pool's workers (the counts they hold are lost; finished ones are in the user cache) and reap them,
    so neither the command nor the interpreter's exit waits for a count nobody will read."""
    for process in workers:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()
    for process in workers:
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            process.join(timeout=5)


def _end_manager(pool: ProcessPoolExecutor) -> None:
    """Wait for the pool's manager thread, which notices its killed workers and closes its wake-up pipe. The
    interpreter's exit hook (concurrent.futures.process._python_exit) writes to that pipe without a lock in Python
    3.11 (one came with CPython gh-125451), so a pipe closed in between raised "OSError: Bad file descriptor" at
    exit; a thread that does not end in time is taken off the hook's list instead."""
    import concurrent.futures.process as process_module

    thread = getattr(pool, "_executor_manager_thread", None)      # NB: the executor's own (private) thread
    if thread is None:
        return
    thread.join(timeout=5)
    wakeups = getattr(process_module, "_threads_wakeups", None)
    if thread.is_alive() and wakeups is not None:
        with contextlib.suppress(KeyError, TypeError):
            del wakeups[thread]


def count_rows(tasks: Sequence) -> Iterator[dict]:
    """run_task of each cost task, in order; what the user cache lacks is counted on the pool."""
    from .tasks import run_task

    misses = [t for t in tasks if not is_cached(t.request)]
    if len(misses) >= MIN_PARALLEL:
        _import_counting(misses)
    counted = map_ordered(run_task, misses)
    miss_ids = {id(t) for t in misses}
    for task in tasks:
        yield next(counted) if id(task) in miss_ids else run_task(task)
    for _ in counted:       # none left: lets the pool shut down in order (its workers are killed only on a signal)
        pass


def _import_counting(tasks: Sequence) -> None:
    """Import what counting needs (torch; timm for timm-built models) here, once, before the pool forks: the
    commands load it lazily, and each worker would otherwise import it on its own (seconds each)."""
    import importlib

    from ..models.registry import get_spec

    importlib.import_module("analysis.count.cost")
    if any(get_spec(t.request.model).source != "scratch" for t in tasks):
        importlib.import_module("timm")
