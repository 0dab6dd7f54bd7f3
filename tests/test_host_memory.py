"""A CPU batch whose counted need does not fit the available host memory is halved before anything is
allocated, and the row says why: a real process with a faked small limit keeps its peak RSS under it."""
import json
import subprocess
import sys

from cli import HANG_GUARD_S

from analysis.timing import host_memory
from analysis.timing.host_memory import HEADROOM, available_bytes, halve_to_fit

MIB = 2 ** 20


def test_halving_stops_at_the_first_batch_whose_need_fits():
    need = lambda b: 10 * MIB * b          # noqa: E731 - affine, 10 MiB per image
    batch, halved, why = halve_to_fit(256, need, int(100 * MIB / HEADROOM))
    assert (batch, halved) == (8, [256, 128, 64, 32, 16]) and "halved up front to 8" in why
    assert halve_to_fit(8, need, int(100 * MIB / HEADROOM)) == (8, [], None)
    assert halve_to_fit(4, need, None) == (4, [], None)          # nothing known: nothing halved
    assert halve_to_fit(4, need, 1)[0] == 1                      # batch 1 is kept; it fails on its own


def test_available_memory_is_the_least_of_meminfo_cgroup_and_the_override(monkeypatch, tmp_path):
    monkeypatch.delenv(host_memory.OVERRIDE_ENV, raising=False)
    (tmp_path / "max").write_text("1073741824\n")
    (tmp_path / "current").write_text("536870912\n")
    monkeypatch.setattr(host_memory, "_CGROUP_FILES", [(str(tmp_path / "max"), str(tmp_path / "current"))])
    monkeypatch.setattr(host_memory, "_meminfo_available", lambda: 8 << 30)
    assert available_bytes() == 512 * MIB
    (tmp_path / "max").write_text("max\n")                          # cgroup v2 without a limit
    assert available_bytes() == 8 << 30
    monkeypatch.setenv(host_memory.OVERRIDE_ENV, str(100 * MIB))
    assert available_bytes() == 100 * MIB


# batch 1 first: imports, thread pools and the model's weights are in memory before the limit is measured
CHILD = """
import json, resource, sys
from zoo.runs.tasks import Task, run_task
timed = lambda b: run_task(Task.named("throughput", "deit_ti", 224, b, device="cpu", quick=True, iters=1, threads=1), macs=1,
                           peak={"peak_flops": 1e9, "peak_kernel": "mm_test"})
timed(1)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
row = timed(int(sys.argv[1]))
print(json.dumps({"row": row, "grew": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base}))
"""


def test_a_batch_that_cannot_fit_is_halved_up_front_and_peak_rss_stays_under_the_limit(monkeypatch):
    limit = 300 * MIB           # deit_ti at 224 needs ~2.3 MiB per image (counted): batch 512 ~1.2 GiB
    monkeypatch.setenv(host_memory.OVERRIDE_ENV, str(limit))
    done = subprocess.run([sys.executable, "-c", CHILD, "512"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    row = out["row"]
    assert row.get("failed") is None and row["batch_size"] == 512 and row["requested_batch_size"] == 512
    assert row["ran_batch_size"] == 64 and row["oom_batch_sizes"] == [512, 256, 128]
    assert row["error"].startswith("host memory: batch 512 needs") and "halved up front to 64" in row["error"]
    assert out["grew"] < limit, f"peak RSS grew {out['grew'] / MIB:.0f} MiB past the {limit / MIB:.0f} MiB limit"
