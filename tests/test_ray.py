"""`zoo.compare --executor ray` against a real Ray cluster on loopback: a head and worker nodes, each its own
`ray start` process group (zoo/ray_cluster.py). Skipped where Ray is not installed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

pytest.importorskip("ray", reason="needs the ray extra: pip install \".[ray]\"")

from zoo.compare.cli import main  # noqa: E402
import ray_cluster  # noqa: E402
from ray_cluster import LocalRayCluster  # noqa: E402
from zoo.errors import UsageError  # noqa: E402
from zoo.runs.plan import plan_tasks  # noqa: E402
from zoo.runs.ray_executor import check_ray  # noqa: E402
from zoo.store.user_cache import CACHE_DIR_ENV  # noqa: E402
from analysis.size import Size  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SWEEP = ["--models", "vit_ti16,deit_ti,resnet50", "--metrics", "cost,memory", "--resolutions", "224"]
# counts no other test here makes (a count the cluster's cache holds still goes through tasks._cost, hung below)
KILL_MODELS = ["deit_s", "deit_ti_distilled", "vit_s16", "convnext_t", "swin_t", "vit_b32", "regnety_160", "deit_b"]
KILL_SWEEP = ["--models", ",".join(KILL_MODELS), "--metrics", "cost", "--resolutions", "224"]
# on the doomed node every count hangs (a sitecustomize.py on its PYTHONPATH): the task it takes is running, not
# done, whenever the test looks, and the other nodes write rows meanwhile; cheap in its other Python processes
HANG_ON_THIS_NODE = """
import importlib.abc, importlib.util, sys, time
class _HangCounts(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "zoo.runs.tasks":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        real_exec = spec.loader.exec_module
        def exec_module(module):
            real_exec(module)
            module._cost = lambda task: time.sleep(3600)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _HangCounts())
"""
NOT_COMPARED = {"env", "failed_attempts"}   # where and how often a row ran, not what it measured


def test_a_cluster_never_hands_one_port_to_two_components(monkeypatch):
    """The kernel may hand a port just closed out again: ray start then fails (the dashboard on the GCS's port)."""
    handed = iter([43777, 43777, 43778])

    class Socket:                    # what socket.socket() gives, handing out the ports above in turn
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def bind(self, address):
            self.port = next(handed)

        def getsockname(self):
            return ("0.0.0.0", self.port)

    monkeypatch.setattr(ray_cluster.socket, "socket", Socket)
    taken: set[int] = set()
    assert [ray_cluster.free_port(taken), ray_cluster.free_port(taken)] == [43777, 43778]


@pytest.fixture(scope="module")
def node_probes(tmp_path_factory, keep_peaks_in, _session_probes):
    """(folder, probes): the user cache every node of the cluster reads, holding the session's GEMM peak and
    bandwidth (tests/conftest.py)."""
    folder = tmp_path_factory.mktemp("ray-node-cache")
    keep_peaks_in(folder)
    return folder, _session_probes


@pytest.fixture(scope="module")
def cluster(node_probes):
    with LocalRayCluster(head_cpus=1, env={CACHE_DIR_ENV: str(node_probes[0])}) as running:
        running.add_worker(num_cpus=1)
        yield running


def compare_cli(*args: str, cluster: LocalRayCluster | None = None, wait: bool = True):
    """`python -m zoo.compare ARGS` in a fresh process, as a user runs it (no RAY_ADDRESS inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(cluster.driver_env if cluster else {})
    command = [sys.executable, "-m", "zoo.compare", *args]
    if not wait:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)


def rows(out: Path, kind: str = "cost") -> list[dict]:
    """The whole rows written so far (a line still being written is left out)."""
    path = out / "results" / f"{kind}.jsonl"
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines()]


def measured(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in NOT_COMPARED}


def test_sweep_on_ray_matches_local_and_resumes_across_executors(cluster, tmp_path, capsys):
    check_ray(cluster.address)  # reachable: no error
    on_ray = compare_cli(*SWEEP, "--executor", "ray", "--ray-address", cluster.address,
                         "--format", "json", "--out", str(tmp_path / "ray"), cluster=cluster)
    assert on_ray.returncode == 0, on_ray.stderr
    assert main([*SWEEP, "--format", "json", "--out", str(tmp_path / "local")]) == 0

    ray_rows, local_rows = rows(tmp_path / "ray"), rows(tmp_path / "local")
    assert len(ray_rows) == len(local_rows) == 3
    assert not [r for r in ray_rows if "failed" in r]
    by_key = {(r["model"], r["img_size"]): measured(r) for r in local_rows}
    assert {(r["model"], r["img_size"]): measured(r) for r in ray_rows} == by_key
    for row in ray_rows:
        assert row["env"]["device"] == "meta"
        assert len(row["env"]["ray_node_id"]) == 56 and row["env"]["hostname"]
    assert json.loads(on_ray.stdout)[0]["model"] in {"vit_ti16", "deit_ti", "resnet50"}

    # --resume on the local executor finds every row the Ray executor wrote: nothing is measured again
    before = (tmp_path / "ray" / "results" / "cost.jsonl").read_text()
    assert main([*SWEEP, "--format", "json", "--out", str(tmp_path / "ray"), "--resume"]) == 0
    assert (tmp_path / "ray" / "results" / "cost.jsonl").read_text() == before
    capsys.readouterr()


def test_throughput_row_names_its_node(cluster, node_probes, tmp_path, capsys):
    timed = ["--models", "vit_ti16", "--metrics", "throughput", "--resolutions", "224", "--quick",
             "--device", "cpu", "--batch-sizes", "1", "--out", str(tmp_path), "--format", "csv"]
    result = compare_cli(*timed, "--executor", "ray", "--ray-address", cluster.address, cluster=cluster)
    assert result.returncode == 0, result.stderr
    (row,) = rows(tmp_path, "throughput")
    assert "failed" not in row, row.get("failed")
    assert row["imgs_per_s"] > 0
    env = row["env"]
    assert env["cpu_model"] and env["gpu_name"] is None and env["hostname"]
    assert len(env["ray_node_id"]) == 56 and env["ray_node_ip"] == cluster.address.split(":")[0]
    # the node's own kept peak and bandwidth, as a local run reads its user cache: no probe per row
    gemm, bandwidth = node_probes[1]
    assert row["peak_probe"] == "kept from a quiet probe" and row["peak_flops"] == gemm["peak_flops"]
    assert row["mem_bandwidth"] == bandwidth["mem_bandwidth"]

    assert main([*timed, "--resume"]) == 0  # same machine, so the local executor skips it
    assert len(rows(tmp_path, "throughput")) == 1
    capsys.readouterr()


def test_killing_a_worker_mid_sweep_loses_no_finished_row(cluster, tmp_path):
    hang = tmp_path / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(HANG_ON_THIS_NODE)
    path = os.pathsep.join(filter(None, [str(hang), str(REPO), os.environ.get("PYTHONPATH")]))
    doomed = cluster.add_worker(num_cpus=1, env={"PYTHONPATH": path})
    results = tmp_path / "results" / "cost.jsonl"
    sweep = compare_cli(*KILL_SWEEP, "--executor", "ray", "--ray-address", cluster.address,
                        "--format", "json", "--out", str(tmp_path), cluster=cluster, wait=False)
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while not (rows(tmp_path) and doomed.running("run_on_node")):  # rows written, one task on the node
            assert sweep.poll() is None, sweep.stderr.read()
            assert time.monotonic() < deadline, "no row was written while the worker node ran a task"
            time.sleep(0.05)
        before_kill = results.read_text()
        cluster.kill(doomed)
        stdout, stderr = sweep.communicate(timeout=HANG_GUARD_S)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, stderr

    after = results.read_text()
    assert after.startswith(before_kill)               # every finished row is still there, byte for byte
    finished = [json.loads(line) for line in after.splitlines()]   # and every row is whole
    planned = {(t.request.model, t.request.img_size.side) for t in plan_tasks(KILL_MODELS, [Size(224, 224)], [1], ["cost"]).tasks}
    assert len(before_kill.splitlines()) < len(finished) == len(planned)   # the kill came mid-sweep
    assert {(r["model"], r["img_size"]) for r in finished} == planned      # one row per task
    for row in finished:  # measured (maybe after a retry elsewhere), or failed with every attempt's error
        assert ("macs" in row and "failed" not in row) or row["failed_attempts"], row
    retried = [r["failed_attempts"] for r in finished if r.get("failed_attempts")]
    print(f"{len(before_kill.splitlines())} rows before the kill; retried: {retried}")
    assert retried, "no task was running on the killed node"
    assert not [r for r in finished if "failed" in r]      # each task the node held hung: measured again elsewhere


RUN_RAY = """
import json, sys
from analysis.size import Size
from zoo.runs.ray_executor import run_ray
from zoo.runs.scheduler import schedule
from zoo.runs.tasks import Task
rows = []
run_ray(schedule([Task.named("throughput", "vit_ti16", Size(224, 224), device="cuda"),
                  Task.named("cost", "no_such_model", Size(224, 224))]), rows.append, address=sys.argv[1], max_retries=1)
print(json.dumps(rows))
"""


def test_tasks_that_cannot_run_become_failed_rows(cluster):
    """No GPU in the cluster: failed at once. An error escaping run_task: tried 1 + max_retries times."""
    result = subprocess.run([sys.executable, "-c", RUN_RAY, cluster.address], cwd=REPO, capture_output=True,
                            text=True, timeout=HANG_GUARD_S, env={**os.environ, **cluster.driver_env})
    assert result.returncode == 0, result.stderr
    no_gpu, broken = sorted(json.loads(result.stdout.splitlines()[-1]), key=lambda r: r["kind"], reverse=True)
    for row in (no_gpu, broken):
        assert {"schema", "kind", "model", "img_size", "batch_size", "settings", "software"} <= row.keys()
        assert row["failed"] == row["failed_attempts"][-1]
    assert no_gpu["model"] == "vit_ti16" and no_gpu["failed"].startswith("NoGPU: ")
    assert no_gpu["settings"]["device"] == "cuda"
    assert broken["model"] == "no_such_model" and len(broken["failed_attempts"]) == 2
    assert all(e.startswith("UnknownModelError: ") for e in broken["failed_attempts"])


@pytest.mark.parametrize("address", ["nonsense:::", "localhost", ":6379", "head:", "head:99999",
                                     "ray://head:10001", "a b:6379", "::1:6379"])
def test_malformed_address_is_a_usage_error(address):
    with pytest.raises(UsageError, match="--ray-address: expected auto or HOST:PORT"):
        check_ray(address)


def test_unreachable_addresses_are_usage_errors(monkeypatch):
    with pytest.raises(UsageError, match=r"no Ray cluster answers at 127\.0\.0\.1:1 "):
        check_ray("127.0.0.1:1")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # what auto, and no address, would connect to
    for address in ("auto", None):
        with pytest.raises(UsageError, match="no Ray cluster answers"):
            check_ray(address)


def test_missing_ray_is_a_usage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UsageError, match=r'pip install "archzoo\[ray\]"'):
        check_ray("auto")


@pytest.mark.parametrize("address", ["nonsense:::", "127.0.0.1:1"])
def test_bad_address_exits_2_with_one_line(address, tmp_path):
    result = compare_cli("--models", "vit_ti16", "--metrics", "cost", "--executor", "ray",
                         "--ray-address", address, "--out", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("zoo.compare: error: --ray-address")
    assert not (tmp_path / "results").exists()


def test_a_port_that_is_not_a_ray_head_is_refused_in_seconds(tmp_path):
    """A plain HTTP server passes a TCP probe, and ray.init would retry it forever: the HTTP/2 probe refuses it."""
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        started = time.monotonic()
        result = compare_cli("--models", "vit_ti16", "--metrics", "cost", "--executor", "ray", "--ray-address",
                             address, "--out", str(tmp_path))
        assert result.returncode == 2 and time.monotonic() - started < 60       # a hang guard, not a speed target
        (line,) = result.stderr.strip().splitlines()
        assert "not as a Ray head" in line and not (tmp_path / "results").exists()
    finally:
        server.shutdown()
