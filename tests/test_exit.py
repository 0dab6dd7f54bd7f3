"""The commands exit without the interpreter's last garbage collections (zoo.console.exit), and nothing else of
the exit is lost: the status, atexit handlers, buffered output."""

import subprocess
import sys

import pytest

from cli import HANG_GUARD_S

# garbage only a collection would find: a cycle whose finalizer says when it is collected (gc.disable(): by the
# exit's own collection, which runs whether or not the collector is enabled, never by an earlier one)
CYCLE = """
import gc
gc.disable()

class Cycle:
    def __del__(self):
        print(" collected", end="", flush=True)

cycle = Cycle()
cycle.itself = cycle
del cycle
"""

EXIT = CYCLE + """
import atexit, sys
from zoo.console.exit import exit_without_collecting

atexit.register(lambda: print(" atexit ran", end="", flush=True))
sys.stdout.write("buffered")             # no newline, no flush: left for the exit to write
exit_without_collecting(3)
"""

COMMAND = CYCLE + """
import runpy, sys

sys.argv = sys.argv[1:]                  # [module, its arguments...]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def test_the_exit_skips_the_last_collection_and_keeps_the_rest():
    done = subprocess.run([sys.executable, "-c", EXIT], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered atexit ran"         # sys.exit(3) prints "buffered atexit ran collected"


@pytest.mark.parametrize("command", [["zoo", "--models", "no_such_model"], ["zoo.compare", "--models", "no_such_model"],
                                     ["zoo.select", "--resolution", "abc"], ["zoo.report", "--results", "/no/such"]])
def test_every_command_exits_so(command):
    done = subprocess.run([sys.executable, "-c", COMMAND, *command], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 2 and "error" in done.stderr, done.stderr      # a usage error: main returned 2
    assert done.stdout == ""
