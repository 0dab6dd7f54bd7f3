"""Suite-wide checks at collection: every test that needs a GPU carries the `cuda` mark (cuda_marks.py).

No test reads a user cache (zoo.runs.user_cache) it did not write: the whole session points the cache
at a fresh temporary folder (so do Ray workers and subprocesses, which inherit it; under pytest-xdist each
worker imports this file, so each has its own), and each test gets its own empty one on top."""
import os
import shutil
import tempfile

import pytest
from cuda_marks import pytest_collection_modifyitems  # noqa: F401  (a pytest hook)

from zoo.runs.user_cache import CACHE_DIR_ENV, NO_CACHE_ENV

_SESSION_CACHE = tempfile.mkdtemp(prefix="archzoo-test-cache-")


def pytest_configure(config):
    os.environ[CACHE_DIR_ENV] = _SESSION_CACHE      # before any session fixture (a Ray cluster) starts
    os.environ.pop(NO_CACHE_ENV, None)


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_user_cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("archzoo-cache")
    monkeypatch.setenv(CACHE_DIR_ENV, str(path))
    monkeypatch.delenv(NO_CACHE_ENV, raising=False)
    return path
