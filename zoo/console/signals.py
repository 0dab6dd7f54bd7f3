"""SIGTERM (kill, systemd, CI runners, schedulers) handled like Ctrl-C: one line, finished rows kept, children ended.

Inside `terminate_as_interrupt()` a SIGTERM raises `Terminated`, a KeyboardInterrupt, in the main thread,
so the same cleanup runs as for Ctrl-C (subprocess.run kills its child on the way out, locks are released,
the store never has half a row); the command then exits 143 (128 + SIGTERM), as the shell reports it.
A second Ctrl-C or SIGTERM, while that cleanup runs or the interpreter shuts down, ends the process at once
(130 or 143, one line, no traceback): the user asked twice.

NB: Python cannot raise out of a finalizer (a weakref callback such as the memory tracker's, a __del__): a signal
whose handler runs there is printed as "Exception ignored" and lost, and the command ran on to exit 0 (issue 42,
defect 5). Such an interrupt is taken back and raised again a moment later, outside the finalizer.

NB: an exception raised inside an import leaves that module half made: torch's C extension then aborts the
interpreter's exit (exit 134), and importing numpy again raises "cannot load module more than once" (issue 54).
A signal that lands inside an import is held until the main thread is out of every import, then raised there.

Before a command's main() runs (`import zoo`, its start-up imports: about 0.2 s) and after it returns, no cleanup
is needed: `arm_for_commands()`, called by `import zoo` in a command's own process only, makes a signal there one
line and the exit status at once.
"""
from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time
import _thread


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM."""


_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_DEFERRED: list = []      # a signal taken while the answer is kept and printed (defer())
REDELIVER_S = 0.01        # an interrupt lost in a finalizer is raised again this long after; a held one is looked at
# the commands by how a process names them: `python -m MODULE` (sys.orig_argv) or the console script (sys.argv[0])
COMMANDS = {"zoo": "zoo.compare", "zoo.__main__": "zoo.compare", "zoo.compare": "zoo.compare",
            "zoo.compare.__main__": "zoo.compare", "zoo.select": "zoo.select", "zoo.select.__main__": "zoo.select",
            "zoo.report": "zoo.report", "zoo.report.__main__": "zoo.report",
            "zoo-compare": "zoo.compare", "zoo-select": "zoo.select", "zoo-report": "zoo.report"}
_STATE = {"main": "before"}     # whether a command's main() has run ("before", "running", "after")


def command_name() -> str | None:
    """The archzoo command this process runs, or None (a library, a test, a pool worker): `python -m zoo.select`
    while its packages are imported (sys.argv[0] is "-m" then), or a console script (zoo-select)."""
    if sys.argv[:1] == ["-m"]:
        argv = list(getattr(sys, "orig_argv", []))
        module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
        return COMMANDS.get(module)
    return COMMANDS.get(os.path.basename(sys.argv[0])) if sys.argv else None


def _outside_main(prog: str):
    def handler(signum, frame):
        if _STATE["main"] == "after":       # the answer is printed: it leaves with the process, whole
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):     # a flush this interrupted (reentrant), a closed pipe
                    stream.flush()
        when = "while exiting" if _STATE["main"] == "after" else "while starting: nothing done"
        said = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted (Ctrl-C)"
        os.write(2, f"{prog}: {said} {when}\n".encode())
        os._exit(128 + signum)
    return handler


def arm_for_commands() -> None:
    """In an archzoo command's own process (command_name), from `import zoo` on: a Ctrl-C or SIGTERM before its
    main() runs or after it returns is one line and 130 or 143 at once, never a traceback from a start-up import.
    Inside main(), terminate_as_interrupt's handlers take over."""
    prog = command_name()
    if prog is None or threading.current_thread() is not threading.main_thread():
        return
    for sig in _SIGNALS:
        signal.signal(sig, _outside_main(prog))


def _in_import(frame) -> bool:
    """Whether `frame`, or a frame that called it, runs inside the import machinery (a module being imported)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _hold_until_imported(prog: str, signum: int, first) -> None:
    """The main thread is importing: hold the signal, and raise it (through `first`) once no import is under way
    in the main thread; a second signal meanwhile exits at once."""
    main, again = threading.main_thread().ident, []

    def held(sig, frame):
        if again:           # the held signal, delivered again by the watcher below
            again.clear()
            first(sig, frame)
        else:
            _exit_now(prog)(sig, frame)

    def watch():
        while _in_import(sys._current_frames().get(main)):
            time.sleep(REDELIVER_S)
        again.append(signum)
        _thread.interrupt_main(signum)

    for sig in _SIGNALS:
        signal.signal(sig, held)
    threading.Thread(target=watch, name="archzoo-held-signal", daemon=True).start()


def _exit_now(prog: str):
    def handler(signum, frame):
        os.write(2, f"{prog}: {interrupted(_error(signum))} again: exiting now\n".encode())
        os._exit(128 + signum)
    return handler


def _error(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _first_signal(prog: str):
    def handler(signum, frame):
        if _in_import(frame):
            _hold_until_imported(prog, signum, handler)
            return
        for sig in _SIGNALS:           # the next one exits at once, whatever the cleanup is doing
            signal.signal(sig, _exit_now(prog))
        # NB: marked, never kept, not even in a local here: the exception's traceback holds this frame, and a
        # cycle through it keeps the interrupted frames, a suspended counting pool's generator among them, alive
        # past refcounting, until the interpreter's exit waits on that pool's workers (a hang)
        raise _marked(_error(signum), signum)
    return handler


def _marked(error: KeyboardInterrupt, signum: int) -> KeyboardInterrupt:
    error.archzoo_signum = signum        # what _take_back raises again, should a finalizer drop it
    return error


def _take_back(first, previous_hook):
    """sys.unraisablehook: an interrupt of ours raised inside a finalizer is not lost; the first handler is armed
    again and the same signal raised at the next bytecode outside the finalizer (one landing in a finalizer
    again comes back here). Anything else goes to the previous hook."""
    def hook(unraisable):
        signum = getattr(unraisable.exc_value, "archzoo_signum", None)
        if signum is None:
            previous_hook(unraisable)
            return
        for sig in _SIGNALS:
            signal.signal(sig, first)
        # NB: from another thread, a moment later: a pending signal set here would run its handler inside this hook
        again = threading.Timer(REDELIVER_S, _thread.interrupt_main, (signum,))
        again.daemon = True
        again.start()
    return hook


@contextlib.contextmanager
def terminate_as_interrupt(prog: str = "archzoo", command: bool = False):
    """SIGTERM raises Terminated, Ctrl-C KeyboardInterrupt, a second one of either exits at once. `command`: the
    process ends after this block (not a test calling main()), so that stays armed for the interpreter's exit."""
    if threading.current_thread() is not threading.main_thread():   # signals reach the main thread only
        yield
        return
    first = _first_signal(prog)
    _DEFERRED.clear()
    previous = {sig: signal.signal(sig, first) for sig in _SIGNALS}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _take_back(first, previous_hook)
    if command:
        _STATE["main"] = "running"
    try:
        yield
    finally:
        if command:
            _STATE["main"] = "after"
        armed = signal.getsignal(signal.SIGINT) is not first
        for sig, handler in previous.items():
            if not (armed and command):
                signal.signal(sig, handler)
        if not (armed and command):
            sys.unraisablehook = previous_hook


def defer(prog: str) -> None:
    """From here on (inside terminate_as_interrupt, until the command ends) the first Ctrl-C or SIGTERM is kept for
    `deferred()`, not raised: the answer is settled and being kept and printed, and raising would lose it. A second
    one exits at once. Does nothing where the first handler is not ours (select() called from a library)."""
    if threading.current_thread() is not threading.main_thread() or \
            getattr(signal.getsignal(signal.SIGINT), "__qualname__", "") != "_first_signal.<locals>.handler":
        return

    def keep(signum, frame):
        for sig in _SIGNALS:
            signal.signal(sig, _exit_now(prog))
        _DEFERRED.append(_error(signum))
    for sig in _SIGNALS:
        signal.signal(sig, keep)


def deferred() -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM `defer()` kept, or None."""
    return _DEFERRED[0] if _DEFERRED else None


def handles_sigterm(prog: str):
    """Decorate a command's main(): SIGTERM raises Terminated inside it, Ctrl-C KeyboardInterrupt; one that
    escapes (main() catches those it can answer) is one line, 143 or 130."""
    def wrap(main):
        @functools.wraps(main)
        def wrapped(*args, **kwargs):
            argv = args[0] if args else kwargs.get("argv")       # None: the command line (a process of its own)
            try:
                with terminate_as_interrupt(prog, command=argv is None):
                    return main(*args, **kwargs)
            except KeyboardInterrupt as e:
                print(f"{prog}: {interrupted(e)}", file=sys.stderr)
                return exit_status(e)
        return wrapped
    return wrap


def interrupted(error: KeyboardInterrupt) -> str:
    return "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"


def exit_status(error: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal's number), as the shell reports them."""
    return 143 if isinstance(error, Terminated) else 130
