"""What a user types or a results file holds never crashes archzoo, loses a row, or exits 0 on failure.

Each case runs the real command in a fresh folder: bad input exits 2 with one line and writes nothing;
failures exit 1 with one line each and a count; Ctrl-C exits 130 keeping every finished row; damaged
results files are reported, never fatal. Where the process boundary is what is tested (exit status and
stderr of a real process, signals, a second process) it is a subprocess; elsewhere the command's own
main() runs in this process (cli.call_main: the same code, without an interpreter start each).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zoo
from cli import HANG_GUARD_S, call_main, run_cli
from analysis.size import Size
from committed import committed_text

REPO = Path(__file__).resolve().parents[1]
COST = ["--metrics", "cost"]


def assert_usage_error(result: subprocess.CompletedProcess, expected: str, out: Path | None = None) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    if out is not None:
        assert not (out / "results").exists() or not any((out / "results").iterdir())


@pytest.mark.parametrize("args, expected", [
    (["--models", "vit_ti16", "--resolutions", "99999999984"], "bound of 65,536"),
    (["--models", "vit_ti16", "--batch-sizes", "99999999999999999999"], "bound of 1,048,576"),
    (["--models", "vit_ti16", *COST, "--device", "tpu"], "unknown device 'tpu'"),
    (["--models", "vit_ti16", *COST, "--device", "banana"], "unknown device 'banana'"),
    (["--models", "vit_ti16", *COST, "--threads", "999"], "--threads 999"),
    (["--models", "vit_ti16", *COST, "--threads", "1,2"], "not a list"),
    (["--models", "vit_ti16", *COST, "--ray-address", "127.0.0.1:6379"], "only used with --executor ray"),
    (["--models", "vit_ti16", *COST, "--resume", "--no-save"], "--no-save"),
    (["--models", "vit_h14", *COST, "--resolutions", "224,225"], "--resolutions 225"),
    (["--models", "timm:maxvit_tiny_tf_224", *COST, "--resolutions", "225"], "cannot take 225 px: timm says"),
    (["--models", "vit_ti16", *COST, "--executor", "dask"], "unknown executor"),
])
def test_bad_input_exits_2_before_any_work(tmp_path, args, expected):
    assert_usage_error(call_main("zoo.compare", *args, "--out", str(tmp_path), cwd=tmp_path), expected, tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused_even_when_only_counting(tmp_path):
    assert_usage_error(call_main("zoo.compare", "--models", "vit_ti16", *COST, "--device", "cuda", "--out",
                               str(tmp_path)), "no CUDA GPU", tmp_path)


def _results_is_a_file(tmp: Path) -> str:
    (tmp / "results").write_text("a file")
    return str(tmp)


def _rows_file_is_a_folder(tmp: Path) -> str:
    (tmp / "results" / "cost.jsonl").mkdir(parents=True)
    return str(tmp)


@pytest.mark.parametrize("make_out, expected", [
    (lambda tmp: "/proc/archzoo-nope", "--out"),
    (lambda tmp: "/sys/archzoo-nope", "--out"),
    (_results_is_a_file, "is a file"),
    (_rows_file_is_a_folder, "is a folder"),
])
def test_an_out_that_cannot_take_rows_is_refused_before_measuring(tmp_path, make_out, expected):
    out = make_out(tmp_path)
    result = call_main("zoo.compare", "--models", "vit_ti16", *COST, "--out", out, cwd=tmp_path)
    assert_usage_error(result, expected)


def test_an_adhoc_timm_model_is_built_at_the_size_asked_for(tmp_path):
    result = call_main("zoo.compare", "--models", "timm:vit_base_patch16_clip_224", *COST, "--resolutions", "384",
                     "--format", "json", "--no-save")
    assert result.returncode == 0, result.stderr
    (record,) = json.loads(result.stdout)
    # ViT-B/16 at 384: 24 x 24 patches + the class token, as the closed form's N = HW/P^2 + 1
    assert record["img_size"] == 384 and record["macs"] > 3 * 17.5e9


@pytest.mark.parametrize("broken, expected_failures", [("deit_ti", 1), ("deit_ti,vit_ti16", 2)])
def test_failed_measurements_exit_1_with_one_line_each_and_a_count(tmp_path, monkeypatch, broken,
                                                                   expected_failures):
    # the command's own main() (exit status, stderr and rows are what is tested, not a process): counted here,
    # not by the pool's workers, which would not see the injected failure
    import zoo.runs.parallel
    import zoo.runs.tasks as tasks

    real = tasks._cost

    def sometimes_broken(task):
        if task.request.model in broken.split(","):
            raise RuntimeError("injected failure\n  frame 1 (C++)\n  frame 2 (C++)")
        return real(task)

    monkeypatch.setattr(tasks, "_cost", sometimes_broken)
    monkeypatch.setattr(zoo.runs.parallel, "available_cores", lambda: 1)
    result = call_main("zoo.compare", "--models", "vit_ti16,deit_ti", *COST, "--out", str(tmp_path), "--format",
                       "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    failures = [line for line in result.stderr.splitlines() if line.startswith("zoo.compare: failed: ")]
    assert len(failures) == expected_failures
    assert all(line.endswith("RuntimeError: injected failure") for line in failures)   # no C++ frames
    assert f"{expected_failures} of 2 measurements failed" in result.stderr
    assert "Traceback" not in result.stderr
    rows = [json.loads(line) for line in (tmp_path / "results" / "cost.jsonl").read_text().splitlines()]
    assert sum(1 for r in rows if r.get("failed")) == expected_failures and len(rows) == 2


def _wait_for_rows(path: Path, count: int, proc: subprocess.Popen, timeout: float = HANG_GUARD_S) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().count("\n") >= count):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "no rows appeared"
        time.sleep(0.05)


INJECT_HANG = """
import sys
import time
import zoo.runs.tasks as tasks
real = tasks._cost
def hangs(task):
    if task.request.model == sys.argv[1]:
        time.sleep(3600)        # never done: the rows after it wait for it (the pool hands rows back in order)
    return real(task)
tasks._cost = hangs
from zoo.compare.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_ctrl_c_exits_130_with_one_line_and_keeps_every_finished_row(tmp_path):
    # the third of six counts hangs (injected), so Ctrl-C comes after exactly the two rows before it
    models = "vit_ti16,deit_ti,deit_s,resnet50,convnext_t,swin_t"
    cmd = [sys.executable, "-c", INJECT_HANG, "deit_s", "--models", models, *COST, "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    rows_file = tmp_path / "results" / "cost.jsonl"
    _wait_for_rows(rows_file, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith("zoo.compare: interrupted")
    kept = [json.loads(line) for line in rows_file.read_text().splitlines()]   # every line whole
    assert [row["model"] for row in kept] == ["vit_ti16", "deit_ti"]


INJECT_WAIT = """
import os
import sys
import time
import zoo.runs.tasks as tasks
real = tasks._cost
def waits(task):
    while task.request.model == sys.argv[1] and not os.path.exists(sys.argv[2]):
        time.sleep(0.05)        # the rows after it wait for it (the pool hands rows back in order)
    return real(task)
tasks._cost = waits
from zoo.compare.cli import main
sys.exit(main(sys.argv[3:]))
"""


def test_a_second_run_into_the_same_folder_is_refused_while_the_first_runs(tmp_path):
    # the first is a process of its own (its lock is another process's), held mid-run: its second count waits
    # for a file (injected) until the second run, this process's main(), has been refused
    go_on = tmp_path / "go-on"
    args = ["--models", "vit_ti16,deit_ti,resnet50", *COST, "--out", str(tmp_path)]
    first = subprocess.Popen([sys.executable, "-c", INJECT_WAIT, "deit_ti", str(go_on), *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        _wait_for_rows(tmp_path / "results" / "cost.jsonl", 1, first)
        second = call_main("zoo.compare", *args, cwd=tmp_path)
        assert_usage_error(second, "in use by another archzoo run")
    finally:
        go_on.touch()
        _, stderr = first.communicate(timeout=HANG_GUARD_S)
    assert first.returncode == 0, stderr
    models = [json.loads(line)["model"] for line in (tmp_path / "results" / "cost.jsonl").read_text().splitlines()]
    assert models == ["vit_ti16", "deit_ti", "resnet50"]        # each row once: the refused run wrote none


def test_resume_after_damage_keeps_every_row_and_names_the_bad_lines(tmp_path):
    args = ["--models", "vit_ti16,deit_ti", *COST, "--out", str(tmp_path), "--format", "json"]
    assert call_main("zoo.compare", *args, cwd=tmp_path).returncode == 0
    rows_file = tmp_path / "results" / "cost.jsonl"
    good = rows_file.read_bytes()
    rows_file.write_bytes(good + b"\xff\xfe\nnull\n[1, 2]\n" + json.dumps({"schema": 99, "macs": 1}).encode()
                          + b"\n" + good.splitlines()[0][:40])              # ends torn, without a newline
    result = call_main("zoo.compare", *args, "--resume", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "skipped 5 line(s)" in result.stderr
    assert len(json.loads(result.stdout)) == 2                             # both rows found again, none re-measured
    assert rows_file.read_bytes().startswith(good)
    report = call_main("zoo.report", "--results", str(tmp_path), cwd=tmp_path)
    assert report.returncode == 0 and "Traceback" not in report.stderr
    assert "5 line(s) of results/ are not valid rows" in (tmp_path / "reports" / "not_measured.md").read_text()


def test_report_arguments_that_cannot_work_exit_2_and_create_nothing(tmp_path):
    missing = tmp_path / "does" / "not" / "exist"
    assert_usage_error(call_main("zoo.report", "--results", str(missing)), "does not exist")
    assert not (tmp_path / "does").exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert_usage_error(call_main("zoo.report", "--results", str(a_file)), "is not a folder")
    (tmp_path / "results").mkdir()
    assert_usage_error(call_main("zoo.report", "--results", str(tmp_path), "--out", "/proc/archzoo-nope"), "--out")
    assert_usage_error(call_main("zoo.report", "--results", str(tmp_path), "--out", str(a_file)), "is a file")


def _report_exit(results: Path) -> tuple[int, str]:
    """zoo.report's main in this process (fast enough for many hypothesis examples)."""
    import contextlib
    import io

    from zoo.report.__main__ import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        return main(["--results", str(results)]), err.getvalue()


def _real_rows() -> list[dict]:
    rows = [json.loads(line) for line in committed_text("results/cost.jsonl").splitlines()]
    picked = [r for r in rows if r["model"] in ("vit_b16", "resnet50", "swin_t", "deit_ti", "vit_h14", "effnet_l2")]
    from zoo.runs.tasks import Task, base_row

    timed = [{**base_row(Task.named("throughput", m, Size.of(s), b, d)), "family": "x", "imgs_per_s": 10.0 * b / s,
              "latency_ms_p50": 100.0 * s / 224, "cv": 0.5 if b == 4 else 0.01, "noisy": b == 4, "threads": 2,
              "ran_batch_size": b, "env": {"cpu_model": cpu, "gpu_name": None}}
             for m in ("vit_b16", "resnet50") for s in (224, 384) for b in (1, 4) for d in ("fp32", "bf16")
             for cpu in ("CPU A", "CPU B")]
    unknown = {**picked[0], "model": "gone_from_the_registry"}
    failed = {**base_row(Task.named("throughput", "swin_t", Size.of(224))), "failed": "MemoryError: out of memory at batch 1"}
    return picked + timed + [unknown, failed]


REAL_ROWS = _real_rows()


def _results_of(folder: Path, subset: list[int], damage: bytes) -> Path:
    """`folder` holding results/ with the rows REAL_ROWS[subset] and `damage` at the end of each file."""
    (folder / "results").mkdir()
    for kind in ("cost", "throughput"):
        lines = [json.dumps(REAL_ROWS[i]) + "\n" for i in subset if REAL_ROWS[i]["kind"] == kind]
        (folder / "results" / f"{kind}.jsonl").write_bytes("".join(lines).encode() + damage)
    return folder


REPORTS = ("index.html", "cost.md", "plots.json")
EVERY_ROW_TORN, NO_ROW_NOT_UTF8 = (list(range(len(REAL_ROWS))), b"{\"torn"), ([], b"\xff\n")


# 10 examples and the two ends always, each building every report but the PNG bytes (build_reports(pictures=False):
# every figure's data and plot function, not its rendering, two thirds of a build); the command draws the PNGs
# at both ends below. test_hostile_readers.py sends generated rows of every kind through the same build.
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(subset=EVERY_ROW_TORN[0], damage=EVERY_ROW_TORN[1])
@example(subset=NO_ROW_NOT_UTF8[0], damage=NO_ROW_NOT_UTF8[1])
@given(subset=st.lists(st.sampled_from(range(len(REAL_ROWS))), unique=True, max_size=25),
       damage=st.sampled_from([b"", b"{\"torn", b"\xff\n", b"null\n", b"[]\n"]))
def test_report_builds_from_any_subset_of_rows_and_any_damage(tmp_path_factory, subset, damage):
    from zoo.report.build import build_reports

    folder = _results_of(tmp_path_factory.mktemp("results"), subset, damage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # a damaged line is named in a warning (zoo.report prints it)
        build_reports(folder, pictures=False)
    assert all((folder / "reports" / name).exists() for name in REPORTS)


@pytest.mark.parametrize("subset, damage", [EVERY_ROW_TORN, NO_ROW_NOT_UTF8], ids=["every-row-torn", "no-row-not-utf8"])
def test_report_command_draws_every_png_at_both_ends(tmp_path, subset, damage):
    from zoo.report.build import PLOT_FILES

    folder = _results_of(tmp_path, subset, damage)
    code, err = _report_exit(folder)
    assert code == 0, err
    assert all((folder / "reports" / name).exists() for name in (*REPORTS, *PLOT_FILES))
