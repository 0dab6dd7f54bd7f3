"""The GPU device check, on CPU: `device_check.sh --plan` lists every step and fits 8 minutes writing
nothing, the runner records ok / failed / timed-out / skipped steps in summary.md, and tests/test_cuda.py
collects with every CUDA test skipped."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from cli import HANG_GUARD_S

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "device_check.sh"
MODELS = "--models vit_b16,swin_t,convnext_t,deit_s,resnet50 --resolutions 224,384"
SWEEP = "--metrics cost,memory,throughput,train"
# every step, and what its command must say
EXPECTED = {
    "machine": ["python benchmarks/device_plan.py --machine"],
    "cuda_tests": ["python -m pytest -m cuda -p no:cacheprovider"],
    "compare_fp16": ["python -m zoo.compare", MODELS, SWEEP, "--dtype fp16", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 1,256"],
    "compare_bf16": ["python -m zoo.compare", MODELS, SWEEP, "--dtype bf16", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 256"],
    "compare_fp32": ["python -m zoo.compare", MODELS, SWEEP, "--dtype fp32", "--device cuda --quick --out",
                     "--format markdown", "--batch-sizes 256"],
    "report": ["python -m zoo.report --results"],
    "bench_vit": ["python -m pytest benchmarks/test_bench_vit.py --benchmark-only"],
    "timm_protocol": ["python benchmarks/timm_protocol.py --device cuda --quiet-budget-s"],
    "roofline": ["python benchmarks/roofline_vs_measured.py --device cuda --quick --models"],
}


# the GPU tests: tests/test_cuda.py's (18 with their parameters), and two that sit beside the code they cover
CUDA_TESTS = {"test_macs_equal_closed_form_per_sdpa_backend", "test_cuda_memory_peak_matches_meta_prediction",
              "test_out_of_memory_halves_the_batch_and_records_it", "test_fp16_training_with_grad_scaler_updates_weights",
              "test_tf32_is_recorded_and_raises_the_fp32_gemm_peak",
              "test_cuda_event_span_matches_host_clock_over_the_same_loop",
              "test_harness_latencies_agree_with_wall_time", "test_mfu_against_measured_and_datasheet_peaks"}
CUDA_ELSEWHERE = ("tests/test_fingerprint.py::test_cuda_sdpa_backends_are_named",
                  "tests/test_timing.py::test_cuda_events_time_every_iteration")


def parse_plan(text: str) -> dict:
    """{step: (estimate_s, timeout_s, command)} from the plan printout."""
    steps = {}
    for match in re.finditer(r"^\[\d+\] (\w+): estimate (\d+) s, timeout (\d+) s .*\n    (.+)$", text, re.M):
        steps[match.group(1)] = (int(match.group(2)), int(match.group(3)), match.group(4))
    return steps


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("how", ["OUT", "argument"])
def test_the_script_hands_the_plan_its_out_folder(tmp_path, how):
    """Which OUTDIR the bash script passes on ($OUT, else the argument wins); `echo` stands in for python, so
    the whole plan (and its collection of the suite, test below) is not run three times."""
    out = tmp_path / "out"
    env = {**{k: v for k, v in os.environ.items() if k != "OUT"}, "PYTHON": "echo"}
    args = ["bash", str(SCRIPT), "--plan"]
    if how == "OUT":
        env["OUT"] = str(out)
    else:
        env["OUT"] = str(tmp_path / "not-this-one")
        args.append(str(out))
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0 and done.stdout.split() == [str(SCRIPT.parent / "device_plan.py"), "--plan", str(out)]


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """(cwd, out, the finished `device_check.sh --plan`, the cuda-marked node ids it listed): run once for the
    module, since its listing collects the whole suite; test_cuda_tests_collect_and_all_skip_on_cpu runs those."""
    root = tmp_path_factory.mktemp("plan")
    cwd, out = root / "cwd", root / "out"
    cwd.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    env["PYTHON"] = sys.executable
    args = ["bash", str(SCRIPT), "--plan"]
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    listed = re.search(r"^cuda-marked tests of the whole suite, run by step cuda_tests \((\d+)\):\n((?:    .+\n?)+)",
                       done.stdout, re.M)
    return cwd, out, done, listed.group(2).split() if listed else None


def test_plan_lists_every_step_within_budget_and_writes_nothing(plan):
    how = "default"
    cwd, out, done, node_ids = plan
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
    assert "tests/" not in steps["cuda_tests"][2]                           # the whole suite, not one file
    listed = re.search(r"^cuda-marked tests of the whole suite, run by step cuda_tests \((\d+)\):\n", done.stdout, re.M)
    assert listed and node_ids, done.stdout
    assert int(listed.group(1)) == len(node_ids) == 20            # 18 in tests/test_cuda.py with parameters, 2 beside
    assert {n.split("::")[1].split("[")[0] for n in node_ids} == CUDA_TESTS | {n.split("::")[1] for n in CUDA_ELSEWHERE}
    assert set(CUDA_ELSEWHERE) <= set(node_ids)
    # A test module skipped whole for want of an optional extra (Ray, ONNX) is a collection skip: it must say which
    # extra (its CUDA tests, if it had any, would be missed by the listing and by step cuda_tests).
    skipped = re.search(r"^test modules skipped whole, whose cuda tests it would miss \((\d+)\)((?:\n    .+)*)",
                        done.stdout, re.M)
    assert skipped, done.stdout
    modules = skipped.group(2).split("\n    ")[1:]
    assert len(modules) == int(skipped.group(1)) and all("extra" in line for line in modules), modules


def test_plan_rejects_unknown_options(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--bogus"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=HANG_GUARD_S)
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
        Step("waits", (py, "-c", "print('waited for quiet: 2.46 s in all (at most 12 s)')"), 1, 30, "waits.log"),
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
    assert re.search(r"^\| waits \| ok \| 0 \| [0-9.]+ \| 2.5 s \|", summary, re.M)   # the quiet wait, per step
    assert {s["name"]: s["quiet_wait"] for s in result["steps"]}["waits"] == "2.5 s"
    assert "boom at the end" in summary and "started" in summary    # tails of the failed and timed-out logs
    assert "peak 7 MiB over" in summary and "backend refused" in summary
    assert "1 passed, 1 failed, 0 error, 1 skipped" in summary


def test_a_step_without_time_left_is_skipped_not_started(tmp_path, device_plan):
    step = device_plan.Step("late", ("python", "-c", "open('ran', 'w')"), 1, 30, "late.log")
    outcome = device_plan.run_step(step, tmp_path, deadline=0.0)
    assert outcome.status == "skipped" and listing(tmp_path) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the device check runs these tests for real")
def test_cuda_tests_collect_and_all_skip_on_cpu(tmp_path, plan):
    """Step cuda_tests' command on the node ids the plan's collection of the whole suite listed (the same `-m cuda`
    selection; the plan test checks that listing): collecting the suite once for both tests."""
    xml, node_ids = tmp_path / "cuda.xml", plan[3]
    assert node_ids, plan[2].stdout
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    argv = [a for a in device_plan_steps()["cuda_tests"] if not a.startswith("{out}")][:-1]   # its command, our xml
    done = subprocess.run([sys.executable, *argv[1:], "-q", "--junitxml", str(xml), *node_ids], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout[-3000:]
    cases = list(ET.parse(xml).getroot().iter("testcase"))
    names = {case.get("name").split("[")[0] for case in cases}
    assert names == CUDA_TESTS | {n.split("::")[1] for n in CUDA_ELSEWHERE}
    assert len(cases) == 20
    assert all(case.find("skipped") is not None and "needs a CUDA GPU" in case.find("skipped").get("message", "")
               for case in cases)


def device_plan_steps() -> dict:
    spec = importlib.util.spec_from_file_location("device_plan_steps", ROOT / "benchmarks" / "device_plan.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_plan_steps"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["device_plan_steps"]
    return {step.name: step.argv for step in module.STEPS}


def test_timm_protocol_waits_for_quiet_within_its_budget(monkeypatch):
    spec = importlib.util.spec_from_file_location("timm_protocol", ROOT / "benchmarks" / "timm_protocol.py")
    protocol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(protocol)
    asked = []

    def busy_machine(timeout_s):                  # never quiet: each wait lasts its whole timeout
        asked.append(timeout_s)
        time.sleep(timeout_s)
        return False

    monkeypatch.setattr(protocol, "wait_for_quiet", busy_machine)
    monkeypatch.setattr(protocol, "timm_protocol_imgs_per_s", lambda *args: 10.0)
    monkeypatch.setattr(protocol, "time_model", lambda *args, **kwargs: types.SimpleNamespace(imgs_per_s=10.0))
    monkeypatch.setattr(protocol.zoo, "create_model", lambda *args, **kwargs: torch.nn.Identity())
    result = protocol.agreement("deit_ti", batch_size=1, img_size=32, repeats=4, device="cpu",
                                quiet_timeout_s=0.2, quiet_budget_s=0.3)
    # 0.2 s before the first pair, what is left of the 0.3 s before the second, then nothing: the budget is spent
    assert asked[0] == 0.2 and len(asked) <= 2 and all(0 < left <= 0.1 + 1e-9 for left in asked[1:])
    assert result["quiet_wait_s"] >= 0.2 and result["quiet_pairs"] == 0 and result["ratio"] == 1.0


def test_the_machine_step_runs_as_the_check_runs_it(tmp_path):
    """Step machine's own command, from another folder: device_machine.py is found beside device_plan.py, and the
    step fails (exit 1, saying so) where CUDA is not available, as here on a CPU box."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_plan.py"), "--machine"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == (0 if torch.cuda.is_available() else 1), done.stderr
    assert re.search(r"^torch \S+, CUDA", done.stdout, re.M) and "cpu cores: " in done.stdout
    assert torch.cuda.is_available() or "CUDA: not available" in done.stdout
