"""SIGTERM (kill, systemd, CI runners, schedulers) handled like Ctrl-C: one line, finished rows kept, children ended.

Inside `terminate_as_interrupt()` a SIGTERM raises `Terminated`, a KeyboardInterrupt, in the main thread,
so the same cleanup runs as for Ctrl-C (subprocess.run kills its child on the way out, locks are released,
the store never has half a row); the command then exits 143 (128 + SIGTERM), as the shell reports it.
"""
from __future__ import annotations

import contextlib
import signal
import threading


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM."""


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def terminate_as_interrupt():
    if threading.current_thread() is not threading.main_thread():   # signals reach the main thread only
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
