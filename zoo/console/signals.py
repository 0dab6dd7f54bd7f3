"""SIGTERM (kill, systemd, CI runners, schedulers) handled like Ctrl-C: one line, finished rows kept, children ended.

Inside `terminate_as_interrupt()` a SIGTERM raises `Terminated`, a KeyboardInterrupt, in the main thread,
so the same cleanup runs as for Ctrl-C (subprocess.run kills its child on the way out, locks are released,
the store never has half a row); the command then exits 143 (128 + SIGTERM), as the shell reports it.
A second Ctrl-C or SIGTERM, while that cleanup runs or the interpreter shuts down, ends the process at once
(130 or 143, one line, no traceback): the user asked twice.
"""
from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM."""


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _exit_now(prog: str):
    def handler(signum, frame):
        os.write(2, f"{prog}: {'terminated (SIGTERM)' if signum == signal.SIGTERM else 'interrupted'} "
                    f"again: exiting now\n".encode())
        os._exit(128 + signum)
    return handler


def _first_signal(prog: str):
    def handler(signum, frame):
        for sig in _SIGNALS:           # the next one exits at once, whatever the cleanup is doing
            signal.signal(sig, _exit_now(prog))
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    return handler


@contextlib.contextmanager
def terminate_as_interrupt(prog: str = "archzoo", command: bool = False):
    """SIGTERM raises Terminated, Ctrl-C KeyboardInterrupt, a second one of either exits at once. `command`: the
    process ends after this block (not a test calling main()), so that stays armed for the interpreter's exit."""
    if threading.current_thread() is not threading.main_thread():   # signals reach the main thread only
        yield
        return
    first = _first_signal(prog)
    previous = {sig: signal.signal(sig, first) for sig in _SIGNALS}
    try:
        yield
    finally:
        armed = signal.getsignal(signal.SIGINT) is not first
        for sig, handler in previous.items():
            if not (armed and command):
                signal.signal(sig, handler)


def handles_sigterm(prog: str):
    """Decorate a command's main(): SIGTERM raises Terminated inside it; one that escapes is one line, 143."""
    def wrap(main):
        @functools.wraps(main)
        def wrapped(*args, **kwargs):
            argv = args[0] if args else kwargs.get("argv")       # None: the command line (a process of its own)
            try:
                with terminate_as_interrupt(prog, command=argv is None):
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
