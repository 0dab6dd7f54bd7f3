"""Under pytest-xdist each worker runs torch on its share of the cores (tests/conftest.py), and so do the
processes it starts: N workers at a thread per core would put N threads on every core. Each test starts on
that share, whatever a test before it left torch at."""
import os
import subprocess
import sys

import pytest
import torch
from cli import HANG_GUARD_S

from analysis.timing.fingerprint import available_cores

WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
xdist_only = pytest.mark.skipif(WORKERS < 2, reason="only pytest-xdist's workers share the cores")


def share() -> int:
    return max(1, available_cores() // WORKERS)


@xdist_only
def test_a_test_that_leaves_torch_on_every_core():
    assert torch.get_num_threads() == share()
    torch.set_num_threads(available_cores() + 1)      # not restored, on purpose: the next test must not see it


@xdist_only
def test_a_worker_and_its_children_use_their_share_of_the_cores():
    assert torch.get_num_threads() == share()
    child = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                           capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert child.stdout.strip() == str(share()), child.stderr
