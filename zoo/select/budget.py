"""zoo.select's time budget: --budget-s as an alarm that stops a timing in flight, and what a partial answer
says it was cut short by (the budget, Ctrl-C or SIGTERM) with the exit status of each."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading


class BudgetSpent(KeyboardInterrupt):
    """--budget-s ran out (zoo.select's alarm raises it, so a timing in flight stops too)."""


PARTIAL_STATUS = {"budget": 3, "interrupted": 130, "terminated": 143}
BUDGET_GRACE_S = 2.0      # the alarm's backstop after the budget: the check between candidates comes first


@contextlib.contextmanager
def budget_alarm(seconds: float, armed: bool = True):
    """SIGALRM after `seconds`, then every second until disarmed, raises BudgetSpent, so a timing in flight stops
    too (one raised inside a finalizer is lost, and not printed: the next lands). Yields `disarm`. Main thread
    only, where signals arrive; not armed for an injected timer, whose clock is not the wall's."""
    if not armed or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def spent(signum, frame):
        raise BudgetSpent()

    def quiet_hook(unraisable):
        if not isinstance(unraisable.exc_value, BudgetSpent):
            previous_hook(unraisable)

    previous, previous_hook = signal.signal(signal.SIGALRM, spent), sys.unraisablehook
    sys.unraisablehook = quiet_hook
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), 1.0)
    try:
        yield lambda: signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = previous_hook


def partial_of(error: KeyboardInterrupt, where: str = "") -> dict:
    """{"reason", "status"} of an answer `error` cut short; `where`: what was running ("while counting")."""
    from ..console.signals import Terminated

    if isinstance(error, BudgetSpent):
        reason, status = "budget spent (--budget-s)", "budget"
    elif isinstance(error, Terminated):
        reason, status = "terminated (SIGTERM)", "terminated"
    else:
        reason, status = "interrupted (Ctrl-C)", "interrupted"
    return {"reason": f"{reason} {where}".rstrip(), "status": PARTIAL_STATUS[status]}
