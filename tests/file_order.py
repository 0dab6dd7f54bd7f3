"""The order test files are handed to pytest-xdist's workers: the slowest first (longest processing time first),
so no worker is left with a long file at the end while the others sit idle.

`--dist loadfile` hands files out in collection order, which xdist by default sorts by number of tests; but
here a file's time is not its count (test_ray.py's 18 tests take 30 s or more, test_layers.py's 172 take 2 s),
and a few-test slow file sorted last made a tail. WORKER_SECONDS is each file's time on one worker (a
`--junitxml` run of the README's test command, setup and teardown included; see docs/contributing.md#tests): only
its order matters, and a file not listed (a few seconds) runs after these, in name order. Plain `pytest` runs the
files in this order too."""
from __future__ import annotations

WORKER_SECONDS = {     # Dec 7, main, Intel Xeon, 2 workers, idle (docs/contributing.md#tests)
    "test_ray.py": 30.0, "test_report.py": 19.7, "test_device_check.py": 19.2, "test_select_interrupts.py": 17.2,
    "test_counter.py": 17.2, "test_nonsquare_features.py": 16.1, "test_cli_robustness.py": 15.3,
    "test_models_build.py": 14.0, "test_vit_parity.py": 12.3, "test_hostile_signals.py": 12.1,
    "test_hostile_files.py": 12.0, "test_hostile_answers.py": 10.9, "test_runs.py": 10.2,
    "test_onnx_runtime.py": 10.1, "test_hostile_readers.py": 9.8, "test_stages.py": 9.8, "test_segmenters.py": 9.3,
    "test_compare_cli.py": 8.1, "test_select.py": 8.0, "test_log_capture.py": 7.6, "test_host_memory.py": 7.5,
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
