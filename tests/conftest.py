"""Suite-wide checks at collection: every test that needs a GPU carries the `cuda` mark (cuda_marks.py). The
slowest test files run first (file_order.py), so that no xdist worker is left with a long one at the end.

No test reads a user cache (zoo.store.user_cache) it did not write: the whole session points the cache
at a fresh temporary folder (so do Ray workers and subprocesses, which inherit it; under pytest-xdist each
worker imports this file, so each has its own), and each test gets its own empty one on top. The same for
the user data folder (zoo.store.data_dir) where a command without --out writes: never the user's own.

Under pytest-xdist each worker gets its share of the cores for torch's untimed work (counting, real forwards):
N workers with a thread per core each put N threads on every core, and OpenMP's barriers then spin (measured:
test_counter.py's real-vs-meta forwards took 57 s of CPU at 2 threads, 16 s at 1, on 2 loaded cores). Timed
runs set their own threads (analysis.timing.harness: the cores asked for, all of them by default)."""
import os
import shutil
import subprocess
import tempfile

import pytest
import torch
from committed import extract_committed
from cuda_marks import pytest_collection_modifyitems  # noqa: F401  (a pytest hook)
from file_order import SlowestFilesFirst

from analysis.timing.fingerprint import available_cores
from zoo.store.data_dir import DATA_DIR_ENV
from zoo.store.user_cache import CACHE_DIR_ENV, NO_CACHE_ENV

_SESSION_CACHE = tempfile.mkdtemp(prefix="archzoo-test-cache-")
_SESSION_DATA = tempfile.mkdtemp(prefix="archzoo-test-data-")
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_WORKER_THREADS = max(1, available_cores() // _WORKERS) if _WORKERS > 1 else None


def pytest_configure(config):
    config.pluginmanager.register(SlowestFilesFirst(), "archzoo-slowest-files-first")
    os.environ[CACHE_DIR_ENV] = _SESSION_CACHE      # before any session fixture (a Ray cluster) starts
    os.environ[DATA_DIR_ENV] = _SESSION_DATA
    os.environ.pop(NO_CACHE_ENV, None)
    if _WORKER_THREADS:
        os.environ["OMP_NUM_THREADS"] = str(_WORKER_THREADS)    # this worker's subprocesses start with its share
        torch.set_num_threads(_WORKER_THREADS)


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    shutil.rmtree(_SESSION_DATA, ignore_errors=True)


@pytest.fixture(autouse=True)
def worker_threads():
    """Each test starts on the worker's share of the cores, whatever a test before it set torch to."""
    if _WORKER_THREADS:
        torch.set_num_threads(_WORKER_THREADS)
    return _WORKER_THREADS


@pytest.fixture(autouse=True)
def isolated_user_cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("archzoo-cache")
    monkeypatch.setenv(CACHE_DIR_ENV, str(path))
    monkeypatch.delenv(NO_CACHE_ENV, raising=False)
    return path


@pytest.fixture(autouse=True)
def no_committed_peak(monkeypatch, tmp_path_factory):
    """A probe in this process is not judged against the quiet peak committed for this machine (zoo.runs.peaks
    .committed_quiet): tests fake probes of any size. tests/test_users_answers.py gives its own table."""
    monkeypatch.setattr("zoo.runs.peaks.COMMITTED_PEAKS", tmp_path_factory.mktemp("no-peaks") / "cpu_peaks.json")


@pytest.fixture(autouse=True)
def isolated_data_dir(tmp_path_factory, monkeypatch):
    """Where a command without --out writes (zoo.store.data_dir): an empty folder of the test's own."""
    path = tmp_path_factory.mktemp("archzoo-data")
    monkeypatch.setenv(DATA_DIR_ENV, str(path))
    return path



@pytest.fixture(scope="session")
def committed(tmp_path_factory):
    """A folder holding the results/ and reports/ committed at git's HEAD (tests/committed.py)."""
    return extract_committed(tmp_path_factory.mktemp("committed"))


@pytest.fixture
def small_fs(tmp_path):
    """A real 16 KiB tmpfs, for full-disk tests (needs root and mount permission; skips saying so)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or done.returncode}); "
                    f"needs root in a mount namespace that allows it")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="session")
def _session_probes():
    """This machine's fp32 GEMM peak and triad bandwidth, probed once for the session with short probes (the
    full probes are test_peak.py's and test_roofline.py's concern); marked quiet so the peak cache keeps them."""
    from analysis.timing.bandwidth import measure_bandwidth
    from analysis.timing.peak import measure_peak_flops

    peak = measure_peak_flops("cpu", "fp32", target_seconds=0.005, repeats=1, budget_s=float("inf"))
    bandwidth = measure_bandwidth("cpu", elements=1 << 20, target_seconds=0.005, repeats=1)
    return {**peak, "peak_foreign_cpu_share": 0.0}, {**bandwidth, "bandwidth_foreign_cpu_share": 0.0}


def keep_probes(probes, peak: bool = True) -> None:
    """Keep the session's probes (_session_probes) in the user cache $ARCHZOO_CACHE_DIR names now, as a quiet probe
    of this machine would be: fp32, CPU, all cores and one thread (peak=False: the bandwidth alone)."""
    from zoo.runs.peaks import NAMESPACE, bandwidth_key, peak_key
    from zoo.runs.tasks import Task
    from zoo.store.user_cache import UserCache

    (gemm, bandwidth), keep_peak = probes, peak
    cache = UserCache(NAMESPACE)
    for threads in (None, 1):
        task = Task.named("throughput", "deit_ti", 224, device="cpu", threads=threads)
        if keep_peak:
            cache.put({"peak_key": peak_key(task)}, gemm)
        cache.put({"bandwidth_key": bandwidth_key(task)}, bandwidth)


@pytest.fixture(scope="session")
def keep_peaks_in(_session_probes):
    """keep_peaks_in(folder): the session's probes kept in the user cache at `folder`, for processes that read
    their own (a module's Ray cluster, a module's counted cache): none of them probes the machine again."""
    def keep(folder) -> None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(CACHE_DIR_ENV, str(folder))
            keep_probes(_session_probes)
    return keep


@pytest.fixture
def kept_peaks(_session_probes, isolated_user_cache):
    """The session's GEMM peak and bandwidth, kept in this test's user cache (keep_probes): a timed run in this
    process or a child (which inherits the cache folder) probes nothing. For tests where the probe is not what is
    tested."""
    keep_probes(_session_probes)
    return _session_probes


@pytest.fixture
def kept_bandwidth(_session_probes, isolated_user_cache):
    """kept_peaks' bandwidth alone, for tests of how the GEMM peak is kept and probed (the triad is not theirs)."""
    keep_probes(_session_probes, peak=False)
    return _session_probes[1]
