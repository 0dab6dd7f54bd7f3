"""SIGTERM (kill, systemd, CI runners, schedulers) handled like Ctrl-C: one line, finished rows kept, children ended.

Inside `terminate_as_interrupt()` a SIGTERM raises `Terminated`, a KeyboardInterrupt, in the main thread,
so the same cleanup runs as for Ctrl-C (subprocess.run kills its child on the way out, locks are released,
the store never has half a row); the command then exits 143 (128 + SIGTERM), as the shell reports it.
"""
from __future__ import annotations

import contextlib
import functools
import signal
import sys
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


def handles_sigterm(prog: str):
    """Decorate a command's main(): SIGTERM raises Terminated inside it; one that escapes is one line, 143."""
    def wrap(main):
        @functools.wraps(main)
        def wrapped(*args, **kwargs):
            try:
                with terminate_as_interrupt():
                    return main(*args, **kwargs)
            except Terminated:
                print(f"{prog}: terminated (SIGTERM)", file=sys.stderr)
                return 143
        return wrapped
    return wrap


def interrupted(error: KeyboardInterrupt) -> str:
    return "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"


def exit_status(error: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal's number), as the shell reports them."""
    return 143 if isinstance(error, Terminated) else 130
