"""Every test that needs a GPU carries the `cuda` mark, so the GPU check's `pytest -m cuda` runs it: a test
that skips for want of a GPU without the mark stops collection (tests/cuda_marks.py, via tests/conftest.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

TESTS = Path(__file__).resolve().parent
UNMARKED = '''import pytest

@pytest.mark.skipif(True, reason="needs a CUDA GPU")
def test_on_gpu():
    pass

def test_skips_in_its_body():
    pytest.skip("needs a GPU")
'''
MARKED = '''import pytest

@pytest.mark.cuda
@pytest.mark.skipif(True, reason="needs a CUDA GPU")
def test_on_gpu():
    pass

@pytest.mark.skipif(True, reason="this machine has a GPU")   # a CPU-only test: no mark needed
def test_on_cpu_only():
    pass
'''


def collect(folder: Path) -> subprocess.CompletedProcess:
    (folder / "conftest.py").write_text("from cuda_marks import pytest_collection_modifyitems  # noqa: F401\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-o", "markers=cuda: GPU", str(folder)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


@pytest.mark.parametrize("source, ok", [(UNMARKED, False), (MARKED, True)], ids=["unmarked", "marked"])
def test_a_gpu_test_without_the_cuda_mark_stops_collection(tmp_path, source, ok):
    (tmp_path / "test_gpu.py").write_text(source)
    done = collect(tmp_path)
    assert (done.returncode == 0) == ok, done.stdout + done.stderr
    if not ok:
        assert "test_gpu.py::test_on_gpu" in done.stderr and "test_gpu.py::test_skips_in_its_body" in done.stderr
        assert "lack @pytest.mark.cuda" in done.stderr


def test_the_suite_loads_the_check():
    """The hook runs for the whole suite: tests/conftest.py takes it from cuda_marks."""
    conftest = (TESTS / "conftest.py").read_text()
    assert "from cuda_marks import pytest_collection_modifyitems" in conftest
