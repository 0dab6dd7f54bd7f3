"""The order test files are handed to pytest-xdist's workers: the slowest first (longest processing time first),
so no worker is left with a long file at the end while the others sit idle.

`--dist loadfile` hands files out in collection order, which xdist by default sorts by number of tests; but
here a file's time is not its count (test_ray.py's 17 tests are 40 s, test_hostile_bounds.py's hundreds are a few),
and a few-test slow file sorted last made a tail. WORKER_SECONDS is each file's time on one worker (an idle
`--junitxml` run of the README's test command, setup and teardown included; see docs/contributing.md#tests): only
its order matters, and a file not listed (a few seconds) runs after these, in name order. Plain `pytest` runs the
files in this order too."""
from __future__ import annotations

WORKER_SECONDS = {
    "test_ray.py": 41.7, "test_report.py": 39.0, "test_device_check.py": 27.8, "test_cli_robustness.py": 27.0,
    "test_vit_parity.py": 26.5, "test_select_interrupts.py": 25.2, "test_select_axes.py": 22.5,
    "test_models_build.py": 18.7, "test_counter.py": 18.7, "test_nonsquare_features.py": 17.6, "test_runs.py": 17.6,
    "test_hostile_files.py": 16.6, "test_hostile_signals.py": 15.4, "test_hostile_answers.py": 13.7,
    "test_select.py": 13.7, "test_compare_cli.py": 10.9, "test_onnx_runtime.py": 10.6, "test_host_memory.py": 10.0,
    "test_log_capture.py": 9.4,
}


class SlowestFilesFirst:
    """A pytest plugin (registered by conftest.py): the items of the slowest files first, each file's in its order."""

    def pytest_configure(self, config):
        if hasattr(config.option, "loadscopereorder"):      # pytest-xdist's own reordering by test count, off
            config.option.loadscopereorder = False

    def pytest_collection_modifyitems(self, items):
        first_seen = {}
        for item in items:
            first_seen.setdefault(item.path, len(first_seen))
        items.sort(key=lambda item: (-WORKER_SECONDS.get(item.path.name, 0.0), first_seen[item.path]))
