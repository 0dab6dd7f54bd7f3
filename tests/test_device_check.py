"""The GPU device check, on CPU: `device_check.sh --plan` lists every step and fits 8 minutes writing
nothing, the runner records ok / failed / timed-out / skipped steps in summary.md, and tests/test_cuda.py
collects with every CUDA test skipped."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "device_check.sh"
MODELS = "--models vit_b16,swin_t,convnext_t,deit_s,resnet50 --resolutions 224,384"
SWEEP = "--metrics cost,memory,throughput,train"
# every step, and what its command must say
EXPECTED = {
    "machine": ["python benchmarks/device_plan.py --machine"],
    "cuda_tests": ["python -m pytest -m cuda tests/test_cuda.py -p no:cacheprovider"],
    "compare_fp16": ["python -m zoo.compare", MODELS, SWEEP, "--dtype fp16", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 1,256"],
    "compare_bf16": ["python -m zoo.compare", MODELS, SWEEP, "--dtype bf16", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 256"],
    "compare_fp32": ["python -m zoo.compare", MODELS, SWEEP, "--dtype fp32", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 256"],
    "report": ["python -m zoo.report --results"],
    "bench_vit": ["python -m pytest benchmarks/test_bench_vit.py --benchmark-only"],
    "timm_protocol": ["python benchmarks/timm_protocol.py --device cuda"],
    "roofline": ["python benchmarks/roofline_vs_measured.py --device cuda --quick --models"],
}


def parse_plan(text: str) -> dict:
    """{step: (estimate_s, timeout_s, command)} from the plan printout."""
    steps = {}
    for match in re.finditer(r"^\[\d+\] (\w+): estimate (\d+) s, timeout (\d+) s .*\n    (.+)$", text, re.M):
        steps[match.group(1)] = (int(match.group(2)), int(match.group(3)), match.group(4))
    return steps


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("how", ["OUT", "argument", "default"])
def test_plan_lists_every_step_within_budget_and_writes_nothing(tmp_path, how):
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    env["PYTHON"] = sys.executable
    args = ["bash", str(SCRIPT), "--plan"]
    if how == "OUT":
        env["OUT"] = str(out)
    elif how == "argument":
        env["OUT"] = str(tmp_path / "not-this-one")
        args.append(str(out))
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    steps = parse_plan(done.stdout)
    assert list(steps) == list(EXPECTED), done.stdout
    for name, fragments in EXPECTED.items():
        command = steps[name][2]
        assert all(fragment in command for fragment in fragments), (name, command)
        assert 0 < steps[name][0] <= steps[name][1], (name, steps[name])
    total = int(re.search(r"^estimated total: (\d+) s", done.stdout, re.M).group(1))
    assert total == sum(estimate for estimate, _, _ in steps.values())
    assert total < 480
    where = out if how != "default" else cwd / "device_check_out"
    assert f"OUTDIR = {where} " in done.stdout
    assert "Left out to fit" in done.stdout
    assert listing(cwd) == [] and listing(out) == [], "--plan must write nothing"


def test_plan_rejects_unknown_options(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--bogus"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=60)
    assert done.returncode == 2 and "unknown option" in done.stderr
    assert listing(tmp_path) == []


@pytest.fixture
def device_plan(monkeypatch):
    spec = importlib.util.spec_from_file_location("device_plan", ROOT / "benchmarks" / "device_plan.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "device_plan", module)   # dataclasses look their module up there
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "GRACE_S", 1)
    return module


def test_runner_records_each_outcome_in_the_summary(tmp_path, device_plan, monkeypatch):
    fake_tests = tmp_path / "test_fake.py"
    fake_tests.write_text("import pytest\n\ndef test_good():\n    pass\n\n"
                          "def test_bad():\n    assert 1 == 2, 'peak 7 MiB over'\n\n"
                          "@pytest.mark.skip(reason='backend refused')\ndef test_refused():\n    pass\n")
    Step, py = device_plan.Step, "python"
    steps = (
        Step("cuda_tests", (py, "-m", "pytest", str(fake_tests), "-p", "no:cacheprovider", "-v",
                            "--junitxml", "{out}/pytest_cuda.xml"), 3, 60, "pytest_cuda.log"),
        Step("table", (py, "-c", "print('| model | img/s |')"), 1, 30, "table.log", stdout="table.md"),
        Step("fails", (py, "-c", "import sys; print('boom at the end', file=sys.stderr); sys.exit(3)"), 1, 30,
             "fails.log"),
        Step("hangs", (py, "-c", "import time; print('started', flush=True); time.sleep(120)"), 1, 3, "hangs.log"),
    )
    monkeypatch.setattr(device_plan, "STEPS", steps)
    out = tmp_path / "out"
    assert device_plan.run_all(out) == 1
    summary = (out / "summary.md").read_text()
    result = json.loads((out / "summary.json").read_text())
    status = {s["name"]: (s["status"], s["returncode"]) for s in result["steps"]}
    assert status["cuda_tests"] == ("failed", 1) and status["table"] == ("ok", 0)
    assert status["fails"] == ("failed", 3) and status["hangs"][0] == "timed out"
    outcomes = {t["test"]: t["outcome"] for t in result["cuda_tests"]}
    assert outcomes == {"test_good": "passed", "test_bad": "failed", "test_refused": "skipped"}
    assert "| model | img/s |" in summary                          # the table, from the step's stdout
    assert "boom at the end" in summary and "started" in summary    # tails of the failed and timed-out logs
    assert "peak 7 MiB over" in summary and "backend refused" in summary
    assert "1 passed, 1 failed, 0 error, 1 skipped" in summary


def test_a_step_without_time_left_is_skipped_not_started(tmp_path, device_plan):
    step = device_plan.Step("late", ("python", "-c", "open('ran', 'w')"), 1, 30, "late.log")
    outcome = device_plan.run_step(step, tmp_path, deadline=0.0)
    assert outcome.status == "skipped" and listing(tmp_path) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the device check runs these tests for real")
def test_cuda_tests_collect_and_all_skip_on_cpu(tmp_path):
    xml = tmp_path / "cuda.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "tests/test_cuda.py", "-p", "no:cacheprovider",
                           "-q", "--junitxml", str(xml)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    cases = list(ET.parse(xml).getroot().iter("testcase"))
    names = {case.get("name").split("[")[0] for case in cases}
    assert names == {"test_macs_equal_closed_form_per_sdpa_backend", "test_cuda_memory_peak_matches_meta_prediction",
                     "test_out_of_memory_halves_the_batch_and_records_it",
                     "test_fp16_training_with_grad_scaler_updates_weights",
                     "test_tf32_is_recorded_and_raises_the_fp32_gemm_peak",
                     "test_cuda_event_span_matches_host_clock_over_the_same_loop",
                     "test_harness_latencies_agree_with_wall_time", "test_mfu_against_measured_and_datasheet_peaks"}
    assert len(cases) == 18
    assert all(case.find("skipped") is not None and "needs a CUDA GPU" in case.find("skipped").get("message", "")
               for case in cases)
