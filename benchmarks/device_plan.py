"""The GPU device check in one place: its steps (command, estimated and maximum seconds), printed by
`--plan` and run by `--run OUTDIR` (each under its own timeout, never stopping the rest) into summary.md.

Entry point: benchmarks/device_check.sh. Standard library only, so `--plan` runs on any machine.
Usage: python benchmarks/device_plan.py --plan [OUTDIR] | --run OUTDIR | --machine
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent       # the checkout: holds zoo/, analysis/, tests/
BUDGET_S = 480          # the whole check must finish within 8 minutes on one H200
DEADLINE_S = 465        # no step runs past this; the rest is left for summary.md
LIST_HANG_GUARD_S = 1800   # listing the suite's cuda tests: a hang guard (a loaded machine takes minutes)
GRACE_S = 5             # at a step's timeout: SIGINT (pytest and zoo.compare keep what they have), then SIGKILL
MIN_STEP_S = 10         # a step with less time left than this is skipped, not started
TAIL_LINES = 40
QUIET_BUDGET_S = 12     # a step that waits for a quiet CPU waits at most this long in all, and logs QUIET_LINE
QUIET_LINE = re.compile(r"^waited for quiet: ([0-9.]+) s", re.M)

MODELS = "vit_b16,swin_t,convnext_t,deit_s,resnet50"
RESOLUTIONS = "224,384"


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]       # "python" is the interpreter running this file; "{out}" is OUTDIR
    estimate_s: int             # expected seconds on one H200 (16 CPU cores)
    timeout_s: int
    log: str                    # file under OUTDIR: stdout and stderr, or only stderr when `stdout` is set
    stdout: Optional[str] = None
    why: str = ""               # what the estimate is made of / what was left out

    def command(self, python: str = "python", out: str = "OUTDIR") -> list[str]:
        return [python if a == "python" else a.replace("{out}", out) for a in self.argv]


def _compare(dtype: str, batch_sizes: str, estimate_s: int, timeout_s: int, why: str) -> Step:
    argv = ("python", "-m", "zoo.compare", "--models", MODELS, "--resolutions", RESOLUTIONS,
            "--batch-sizes", batch_sizes, "--metrics", "cost,memory,throughput,train", "--dtype", dtype,
            "--device", "cuda", "--quick", "--out", "{out}", "--format", "markdown")
    return Step(f"compare_{dtype}", argv, estimate_s, timeout_s, f"compare_{dtype}.log",
                stdout=f"compare_{dtype}.md", why=why)


# Estimates for an H200 host: a timed --quick row costs ~1.5 s besides its compute (model built with
# random weights on the CPU, moved to the GPU, warm-up, attention-path probe), a batch-1 row ~0.4 s of
# compute, a batch-256 training step of ViT-B/16 at 384 ~0.5 s in fp16/bf16 and ~3 s in fp32 (85 TFLOP
# on CUDA cores); counting on meta ~0.3 s per (model, size, batch); start-up (imports, CUDA, GEMM peak)
# ~15 s per process. The summary records each step's real duration, to recalibrate these.
STEPS: tuple[Step, ...] = (
    Step("machine", ("python", "benchmarks/device_plan.py", "--machine"), 5, 20, "machine.txt",
         why="nvidia-smi, torch/CUDA/cuDNN versions"),
    Step("cuda_tests", ("python", "-m", "pytest", "-m", "cuda", "-p", "no:cacheprovider",
                        "-v", "-rA", "--junitxml", "{out}/pytest_cuda.xml"), 60, 100, "pytest_cuda.log",
         why="the whole suite's cuda-marked tests (listed below), a few seconds each; collecting ~10 s"),
    _compare("fp16", "1,256", 100, 130,
             "5 models x 2 sizes x 2 batches x (inference + train) = 40 timed rows (GradScaler in train), "
             "20 counted rows"),
    _compare("bf16", "256", 55, 80,
             "batch 256 only: 20 timed rows, 10 counted rows"),
    _compare("fp32", "256", 85, 110,
             "batch 256 only: 20 timed rows (fp32 training at 384 is the slowest compute: ~30 s), "
             "10 counted rows"),
    Step("report", ("python", "-m", "zoo.report", "--results", "{out}"), 15, 40, "report.log",
         why="tables and plots from OUTDIR/results into OUTDIR/reports"),
    Step("bench_vit", ("python", "-m", "pytest", "benchmarks/test_bench_vit.py", "--benchmark-only",
                       "-p", "no:cacheprovider", "--benchmark-json", "{out}/bench_vit.json"), 40, 70, "bench_vit.log",
         why="scratch vs timm ViT-B/16, batch 8, fp32 + bf16, 5 rounds"),
    Step("timm_protocol", ("python", "benchmarks/timm_protocol.py", "--device", "cuda", "--quiet-budget-s",
                           str(QUIET_BUDGET_S)), 35, 60, "timm_protocol.log",
         why=f"deit_s batch 8: 5 interleaved pairs, ~3 s each, plus start-up; waiting for a quiet CPU "
             f"at most {QUIET_BUDGET_S} s in all"),
    Step("roofline", ("python", "benchmarks/roofline_vs_measured.py", "--device", "cuda", "--quick", "--models",
                      "vit_ti16,deit_s,vit_b16,vit_b32,resnet50,swin_t,convnext_t,regnety_160",
                      "--out", "{out}/roofline"), 70, 110, "roofline.log",
         why="8 models x 224, 384 x batch 1, 8 = 32 timed fp32 rows (~1.5 s each), 2 start-ups; roofline vs "
             "MACs-only against measured latency"),
)

LEFT_OUT = ("Left out to fit 8 minutes: batch 1 in the bf16 and fp32 sweeps. At batch 1 an H200 is bound "
            "by kernel launches, not arithmetic, so its latency hardly depends on the dtype; the fp16 sweep "
            "measures it. Batch 256 (inference and training) runs in all three dtypes.")


def estimated_total() -> int:
    return sum(step.estimate_s for step in STEPS)


def print_plan(out: str, python: str) -> None:
    print(f"archzoo device check: {len(STEPS)} steps, run in order with cwd {ROOT}")
    print(f"  python = {python}, PYTHONPATH = {ROOT} (the checkout's own code; nothing installed)")
    print(f"  OUTDIR = {out} (a real run writes there; --plan writes nothing)")
    print()
    for number, step in enumerate(STEPS, 1):
        target = f"{step.stdout} (stdout), {step.log} (stderr)" if step.stdout else step.log
        print(f"[{number}] {step.name}: estimate {step.estimate_s} s, timeout {step.timeout_s} s -> {target}")
        print(f"    {shlex.join(step.command())}")
        if step.why:
            print(f"    ({step.why})")
    print()
    total = estimated_total()
    print(f"estimated total: {total} s ({total / 60:.1f} min; must stay under {BUDGET_S} s)")
    print(f"hard limit: each step stops at its timeout (SIGINT {GRACE_S} s before it, then SIGKILL), and none runs "
          f"past {DEADLINE_S} s overall; steps with under {MIN_STEP_S} s left are skipped and recorded")
    print("then: OUTDIR/summary.md (machine, each step's exit status and seconds, the compare tables, each "
          "CUDA test's outcome, the tail of every failed step's log) and OUTDIR/summary.json")
    print(LEFT_OUT)
    tests = cuda_marked_tests(python)
    if isinstance(tests, str):
        print(f"\ncuda-marked tests: {tests}")
        return
    ids, skipped = tests
    print(f"\ncuda-marked tests of the whole suite, run by step cuda_tests ({len(ids)}):\n    " + "\n    ".join(ids))
    print(f"test modules skipped whole, whose cuda tests it would miss ({len(skipped)})"
          + "".join(f"\n    {line}" for line in skipped))


def cuda_marked_tests(python: str) -> tuple[list[str], list[str]] | str:
    """(node ids `pytest -m cuda` selects in the whole suite, the SKIPPED lines of modules skipped whole at
    collection, with their reasons), or why they could not be listed."""
    argv = [python, "-m", "pytest", "--collect-only", "-q", "-rs", "-m", "cuda", "-p", "no:cacheprovider",
            "--assert=plain"]    # a listing runs no assert: none rewritten (15.2 s to 11.2 s on the 2-core Xeon)
    try:
        done = subprocess.run(argv, cwd=ROOT, env={**_step_env(), "PYTHONDONTWRITEBYTECODE": "1"},
                              capture_output=True, text=True, timeout=LIST_HANG_GUARD_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"could not list them ({e})"
    if done.returncode != 0:
        return f"could not list them (pytest exit {done.returncode}): {_one_line((done.stdout + done.stderr)[-400:])}"
    lines = done.stdout.splitlines()
    skipped = [line for line in lines if line.startswith("SKIPPED [")]
    return [line for line in lines if "::" in line and line not in skipped], skipped


# ---- running --------------------------------------------------------------------------------------

@dataclass
class Outcome:
    step: Step
    status: str                 # ok | failed | timed out | skipped | could not start
    returncode: Optional[int] = None
    seconds: float = 0.0
    limit_s: float = 0.0
    detail: str = ""


def _step_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)        # the step's own process group (start_new_session)
    except ProcessLookupError:
        pass


def run_step(step: Step, out: Path, deadline: float) -> Outcome:
    left = deadline - time.monotonic()
    if left < MIN_STEP_S:
        return Outcome(step, "skipped", detail=f"only {left:.0f} s left of the {DEADLINE_S} s budget")
    limit = min(step.timeout_s, left)
    argv = step.command(sys.executable, str(out))
    start = time.monotonic()
    with open(out / step.log, "w") as log, \
            (open(out / step.stdout, "w") if step.stdout else open(os.devnull, "w")) as stdout:
        log.write(f"$ {shlex.join(argv)}\n")
        log.flush()
        try:
            proc = subprocess.Popen(argv, cwd=ROOT, env=_step_env(), stdin=subprocess.DEVNULL,
                                    stdout=stdout if step.stdout else log, stderr=log, start_new_session=True)
        except OSError as e:
            return Outcome(step, "could not start", seconds=time.monotonic() - start, limit_s=limit, detail=str(e))
        timed_out = False
        try:
            returncode = proc.wait(timeout=max(limit - GRACE_S, 1))
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_group(proc, signal.SIGINT)
            try:
                returncode = proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                returncode = proc.wait()
    seconds = time.monotonic() - start
    status = "timed out" if timed_out else "ok" if returncode == 0 else "failed"
    detail = f"cut to {limit:.0f} s by the overall deadline" if timed_out and limit < step.timeout_s else ""
    return Outcome(step, status, returncode, seconds, limit, detail)


# ---- summary --------------------------------------------------------------------------------------

def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tail(path: Path, lines: int = TAIL_LINES) -> str:
    return "\n".join(_read(path).rstrip().splitlines()[-lines:])


def _fence(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```" if text.strip() else "_(empty)_"


def cuda_test_outcomes(out: Path) -> list[dict]:
    """One {test, outcome, seconds, message, text} per CUDA test: from the JUnit xml, else the -v log."""
    xml = out / "pytest_cuda.xml"
    tests = []
    if xml.exists():
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError:
            root = None
        for case in (root.iter("testcase") if root is not None else ()):
            outcome, message, text = "passed", "", ""
            for tag in ("failure", "error", "skipped"):
                element = case.find(tag)
                if element is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    message, text = element.get("message", ""), element.text or ""
                    break
            tests.append({"test": case.get("name", "?"), "outcome": outcome,
                          "seconds": float(case.get("time") or 0), "message": message, "text": text})
        if tests:
            return tests
    for line in _read(out / "pytest_cuda.log").splitlines():   # "tests/test_cuda.py::name[id] PASSED [ 4%]"
        match = re.match(r"^\S*::(\S+)\s+(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b", line)
        if match:
            tests.append({"test": match.group(1), "outcome": match.group(2).lower(), "seconds": None,
                          "message": "", "text": ""})
    return tests


def quiet_wait(log: Path) -> str:
    """The seconds a step's log says it waited for a quiet CPU ("waited for quiet: X s ..."), else ""."""
    found = QUIET_LINE.search(_read(log))
    return f"{float(found.group(1)):.1f} s" if found else ""


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return (line[:limit - 3] + "...") if len(line) > limit else line


def write_summary(out: Path, outcomes: list[Outcome], started: str, wall_s: float, finished: bool) -> None:
    lines = [f"# archzoo device check, {started}", "",
             f"OUTDIR `{out}`; python `{sys.executable}`; checkout `{ROOT}`; "
             f"{'finished' if finished else 'IN PROGRESS'} after {wall_s:.0f} s (budget {BUDGET_S} s).", "",
             "## Machine", "", _fence(_read(out / "machine.txt")), "",
             "## Steps", "", "quiet wait: seconds a step waited for a quiet CPU before timing (at most "
             f"{QUIET_BUDGET_S} s in all per step; blank: it does not wait).", "",
             "| step | status | exit | seconds | quiet wait | estimate | limit | log |", "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        exit_code = "" if o.returncode is None else str(o.returncode)
        logs = f"{o.step.stdout}, {o.step.log}" if o.step.stdout else o.step.log
        lines.append(f"| {o.step.name} | {o.status}{': ' + _one_line(o.detail, 80) if o.detail else ''} | "
                     f"{exit_code} | {o.seconds:.1f} | {quiet_wait(out / o.step.log)} | {o.step.estimate_s} | "
                     f"{o.limit_s:.0f} | {logs} |")
    ran = {o.step.name for o in outcomes}
    for step in STEPS:
        if step.name not in ran:
            lines.append(f"| {step.name} | not run yet | | | | {step.estimate_s} | {step.timeout_s} | |")

    tests = cuda_test_outcomes(out)
    counts = {k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "error", "skipped")}
    lines += ["", "## CUDA tests", "",
              ", ".join(f"{n} {k}" for k, n in counts.items()) if tests else "_no test outcomes (see pytest_cuda.log)_", ""]
    if tests:
        lines += ["| test | outcome | seconds | message |", "|---|---|---|---|"]
        for t in tests:
            seconds = "" if t["seconds"] is None else f"{t['seconds']:.1f}"
            lines.append(f"| {t['test']} | {t['outcome']} | {seconds} | {_one_line(t['message']).replace('|', '/')} |")

    lines += ["", "## Tables", ""]
    for o in outcomes:
        if o.step.stdout:
            table = _read(out / o.step.stdout).strip()
            lines += [f"### {o.step.name} ({o.status}, {o.seconds:.0f} s)", "",
                      table or f"_no table: the step ended {o.status}; rows it finished are in results/_", ""]
    report = next((o for o in outcomes if o.step.name == "report"), None)
    if report:
        lines += ["### report", "", _fence(_tail(out / report.step.log, 20)), ""]

    lines += ["## Benchmarks", ""]
    for o in outcomes:
        if o.step.name in ("bench_vit", "timm_protocol", "roofline"):
            lines += [f"### {o.step.name} ({o.status}, exit {o.returncode})", "", _fence(_tail(out / o.step.log, 30)), ""]

    failed = [o for o in outcomes if o.status not in ("ok",)]
    lines += ["## Failures", ""]
    if not failed and not any(t["outcome"] in ("failed", "error") for t in tests):
        lines.append("none")
    for o in failed:
        what = {"timed out": f"timed out after {o.seconds:.0f} s (limit {o.limit_s:.0f} s)",
                "failed": f"exit {o.returncode}"}.get(o.status, o.status)
        lines += [f"### {o.step.name}: {what}", "", f"`{shlex.join(o.step.command('python', str(out)))}`", ""]
        if o.detail:
            lines += [o.detail, ""]
        if o.status in ("failed", "timed out"):
            lines += [_fence(_tail(out / o.step.log)), ""]
    for t in tests:
        if t["outcome"] in ("failed", "error"):
            text = "\n".join((t["text"] or t["message"]).rstrip().splitlines()[-25:])
            lines += [f"### CUDA test {t['test']}: {t['outcome']}", "", _fence(text), ""]
    (out / "summary.md").write_text("\n".join(lines).rstrip() + "\n")
    (out / "summary.json").write_text(json.dumps({
        "started": started, "wall_s": round(wall_s, 1), "finished": finished,
        "steps": [{"name": o.step.name, "status": o.status, "returncode": o.returncode, "seconds": round(o.seconds, 1),
                   "quiet_wait": quiet_wait(out / o.step.log),
                   "estimate_s": o.step.estimate_s, "limit_s": round(o.limit_s), "command": o.step.command("python", str(out))}
                  for o in outcomes],
        "cuda_tests": [{k: t[k] for k in ("test", "outcome", "seconds", "message")} for t in tests],
    }, indent=1) + "\n")


def run_all(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    t0 = time.monotonic()
    deadline = t0 + DEADLINE_S
    outcomes: list[Outcome] = []
    for step in STEPS:
        print(f"[device_check] {step.name} ...", file=sys.stderr, flush=True)
        outcome = run_step(step, out, deadline)
        outcomes.append(outcome)
        print(f"[device_check] {step.name}: {outcome.status} (exit {outcome.returncode}, {outcome.seconds:.1f} s)",
              file=sys.stderr, flush=True)
        write_summary(out, outcomes, started, time.monotonic() - t0, finished=False)   # kept if we are killed
    write_summary(out, outcomes, started, time.monotonic() - t0, finished=True)
    print(f"[device_check] summary: {out / 'summary.md'}", file=sys.stderr)
    return 0 if all(o.status == "ok" for o in outcomes) else 1


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--plan", nargs="?", const="", metavar="OUTDIR", help="print the steps; run nothing")
    mode.add_argument("--run", metavar="OUTDIR", help="run every step, writing into OUTDIR")
    mode.add_argument("--machine", action="store_true", help="print this machine's GPU and library versions")
    args = parser.parse_args(argv)
    if args.machine:
        from device_machine import print_machine      # beside this file (sys.path[0] when run as a script)

        return print_machine()
    if args.plan is not None:
        default = os.environ.get("OUT") or "./device_check_out"
        print_plan(os.path.abspath(args.plan or default), sys.executable)
        return 0
    return run_all(Path(args.run).resolve())


if __name__ == "__main__":
    sys.exit(main())
