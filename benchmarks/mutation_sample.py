"""Sampled mutation testing, package by package (docs/mutation.md).

For each package of PACKAGES it copies the working tree into a folder of its own (a fresh git repository, so
the tests that read the committed results/ and reports/ from git's HEAD still can), writes a [tool.mutmut]
section that mutates that package's files only and runs that package's tests, lets mutmut 3 generate every
mutant, draws a seeded random sample of them and runs those (`mutmut run NAME...`), then prints one row per
package: mutants in the package, sampled, killed, timed out, survived, no tests (no selected test calls the
mutated function), no verdict (not reached in the time box), and the score with a 95% Wilson interval.

    nice -n 10 python benchmarks/mutation_sample.py --sample 20                 # every package
    python benchmarks/mutation_sample.py --package zoo/runs --sample 20        # one package
    python benchmarks/mutation_sample.py --package zoo/runs --names 'zoo.store.store.x_f__mutmut_3' \\
        --tests tests/test_store.py                                            # re-run chosen mutants
    python benchmarks/mutation_sample.py --table                               # the table of the last runs

Score = (killed + timed out) / (killed + timed out + survived + no tests): mutmut counts a timeout as a kill;
a mutant no selected test reaches counts as a survivor. mutmut only mutates code inside functions and methods.
Needs mutmut 3 (the `test` extra does not install it: `pip install mutmut==3.8.1`); it uses two of mutmut's
internal functions to generate the mutants without running them (the CLI has no command for that)."""
import argparse
import fnmatch
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261201
WORK = Path(os.environ.get("TMPDIR", "/tmp")) / "archzoo-mutation"

# package -> (globs of the files it holds, tests that cover it). A file belongs to the FIRST package whose glob
# matches it (fnmatch: * crosses folders), so the catch-alls come last. Update the globs when files move.
PACKAGES = [
    ("analysis/count", ["analysis/count/*"],
     ["tests/test_counter.py", "tests/test_closed_form.py", "tests/test_memory.py", "tests/test_params.py",
      "tests/test_fast_meta.py", "tests/test_traffic.py", "tests/test_vitdet.py"]),
    ("analysis/timing", ["analysis/timing/*"],
     ["tests/test_timing.py", "tests/test_peak.py", "tests/test_contention.py", "tests/test_fingerprint.py",
      "tests/test_host_memory.py", "tests/test_log_capture.py", "tests/test_batch_sweep.py"]),
    ("zoo/runs", ["zoo/runs/*"],
     ["tests/test_runs.py", "tests/test_store.py", "tests/test_user_cache.py", "tests/test_data_dir.py",
      "tests/test_hostile_cache.py", "tests/test_batch_sweep.py"]),
    ("zoo/models", ["zoo/models/*"],
     ["tests/test_registry.py", "tests/test_stages.py", "tests/test_models_build.py", "tests/test_accuracy.py",
      "tests/test_tiled_init.py"]),
    ("zoo/report", ["zoo/report/*"],
     ["tests/test_report.py", "tests/test_plots.py", "tests/test_committed_report.py",
      "tests/test_predicted_gpu.py"]),
    ("select", ["zoo/select/*", "zoo/answers/*"],
     ["tests/test_select.py", "tests/test_select_axes.py", "tests/test_answers.py", "tests/test_predicted.py",
      "tests/test_hostile_answers.py", "tests/test_select_markdown.py"]),
    ("compare", ["zoo/compare/*"],
     ["tests/test_compare_cli.py", "tests/test_console_table.py"]),
    ("zoo (other)", ["zoo/*"],
     ["tests/test_options.py", "tests/test_progress.py", "tests/test_cell_formats.py", "tests/test_hostile_options.py",
      "tests/test_lazy_imports.py::test_a_lazy_name_is_the_defining_modules_object_on_every_access",
      "tests/test_hostile_output.py::test_markdown_cells_show_html_as_text_and_keep_the_row_whole"]),
    ("analysis (other)", ["analysis/*"],
     ["tests/test_roofline.py", "tests/test_calibration.py", "tests/test_nonsquare_features.py",
      "tests/test_vocab.py"]),
]
SOURCES = ["analysis", "zoo"]
COLUMNS = ["killed", "timeout", "survived", "no tests", "not checked"]


def package_files(name: str) -> list[str]:
    """The .py files of one package, by the first-match rule of PACKAGES."""
    files = sorted(str(p.relative_to(ROOT)) for s in SOURCES for p in (ROOT / s).rglob("*.py"))
    first = {f: next((n for n, globs, _ in PACKAGES if any(fnmatch.fnmatch(f, g) for g in globs)), None)
             for f in files}
    return [f for f in files if first[f] == name]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def copy_tree(dest: Path) -> str:
    """The working tree's files (tracked and untracked, not ignored) into `dest`, committed there as one commit
    (tests/committed.py reads results/ and reports/ from HEAD). Returns the source's HEAD commit."""
    if dest.exists():
        shutil.rmtree(dest)
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    git = ["git", "-C", str(dest), "-c", "user.name=mutation", "-c", "user.email=mutation@localhost"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "mutation sample"], check=True)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def write_config(dest: Path, files: list[str], tests: list[str]) -> None:
    """pyproject.toml's [tool.mutmut] replaced by one that mutates `files` and runs `tests`."""
    text = (dest / "pyproject.toml").read_text()
    text = re.sub(r"\n\[tool\.mutmut\]\n.*?(?=\n\[|\Z)", "\n", text, flags=re.S)
    section = {
        "source_paths": SOURCES,
        "only_mutate": files,
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:xdist", "-x", "-q"],
        "also_copy": ["README.md", "docs", "benchmarks", "results", "reports"],
        "process_isolation": "forkserver",   # torch is not fork-safe once it ran (a forked child can hang)
        "use_git_change_detection": False,
        "debug": True,                       # pytest's output into mutation.log: why a stats run failed
    }
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in section.items())
    (dest / "pyproject.toml").write_text(text.rstrip() + "\n\n[tool.mutmut]\n" + body)


def env() -> dict:
    e = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    e.pop("PYTHONPATH", None)   # mutmut puts mutants/ first; the original tree must not be importable
    return e


# A Python that a test starts in another folder, with PYTHONPATH=mutants/, reads mutmut's configuration from the
# folder above before mutmut's stats run needs it (it would look in its own working folder and fail).
SITECUSTOMIZE = '''"""Written by benchmarks/mutation_sample.py (see there)."""
import os
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    import mutmut.configuration
    _here = os.getcwd()
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        mutmut.configuration.config()
    finally:
        os.chdir(_here)
'''
GENERATE = ("import os; from mutmut.__main__ import copy_src_dir, copy_also_copy_files, setup_source_paths, "
            "create_mutants; os.makedirs('mutants', exist_ok=True); copy_src_dir(); copy_also_copy_files(); "
            "setup_source_paths(); create_mutants(1)")


def mutmut() -> list[str]:
    return [str(Path(sys.executable).with_name("mutmut"))]


def verdicts(dest: Path) -> dict[str, str]:
    """mutant name -> mutmut's status, for every mutant of the package."""
    out = subprocess.run(mutmut() + ["results", "--all", "true"], cwd=dest, capture_output=True, text=True,
                         env=env(), check=True).stdout
    return dict(m.groups() for m in re.finditer(r"^\s+(\S+): (.+)$", out, flags=re.M))


# mutmut runs the tests that cover the sample once without a mutant before the mutants, though its stats run (in
# the same folder, cached) already ran them all so: --no-clean-run skips that repeat (minutes for zoo/report).
NO_CLEAN_RUN = ("import sys; from mutmut.workers import isolation as i; from mutmut.__main__ import cli; "
                "i.ForkServerRunner.run_clean_tests = i.ForkRunner.run_clean_tests = lambda self, tests: 0; "
                "sys.argv[0] = 'mutmut'; cli()")


def run_mutants(dest: Path, names: list[str], time_box: float, log, clean_run: bool = True) -> float:
    """`mutmut run NAME...` in `dest`, stopped (its whole process group) after `time_box` seconds."""
    start = time.monotonic()
    command = mutmut() if clean_run else [sys.executable, "-c", NO_CLEAN_RUN]
    proc = subprocess.Popen(command + ["run", "--max-children", "1", *names], cwd=dest, env=env(),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=time_box)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return time.monotonic() - start


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def run_package(name: str, args) -> dict:
    tests = args.tests or next(t for n, _, t in PACKAGES if n == name)
    files = package_files(name)
    dest = WORK / (slug(name) + ("-names" if args.names else ""))   # a re-run keeps the sample's folder
    if args.reuse and (dest / "mutants").is_dir():     # the copy, mutants and test stats of an earlier run
        commit = json.loads((dest / "copy.json").read_text())["commit"]
        log = open(dest / "mutation.log", "a")
    else:
        commit = copy_tree(dest)
        (dest / "copy.json").write_text(json.dumps({"commit": commit}))
        write_config(dest, files, tests)
        log = open(dest / "mutation.log", "w")
        subprocess.run([sys.executable, "-c", GENERATE], cwd=dest, env=env(), stdout=log, stderr=subprocess.STDOUT,
                       check=True)
        (dest / "mutants" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    everything = verdicts(dest)
    if args.names:
        sample = args.names
    else:
        sample = random.Random(f"{SEED}:{name}").sample(sorted(everything), min(args.sample, len(everything)))
    todo = [n for n in sample if everything.get(n) == "not checked"] if args.reuse else sample   # resume
    seconds = run_mutants(dest, todo, args.time_box, log, clean_run=not args.no_clean_run) if todo else 0.0
    if args.reuse and (dest / "sample.json").exists():
        seconds += json.loads((dest / "sample.json").read_text())["seconds"]
    status = verdicts(dest)
    record = {"package": name, "files": len(files), "mutants": len(everything), "sampled": len(sample),
              "names": {n: status.get(n, "not checked") for n in sample}, "tests": tests, "commit": commit,
              "seconds": round(seconds), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "mutmut": subprocess.run(mutmut() + ["--version"], capture_output=True, text=True).stdout.strip()}
    (dest / "sample.json").write_text(json.dumps(record, indent=1))
    return record


def row(r: dict) -> str:
    counts = {c: sum(s == c for s in r["names"].values()) for c in COLUMNS}
    other = r["sampled"] - sum(counts.values())   # suspicious, segfault, interrupted
    kills = counts["killed"] + counts["timeout"]
    n = kills + counts["survived"] + counts["no tests"]
    low, high = wilson(kills, n)
    score = f"{kills / n:.0%} ({low:.0%}-{high:.0%})" if n else "-"
    cells = [r["package"], r["mutants"], r["sampled"], *counts.values(), other, score, f"{r['seconds']} s"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(records: list[dict]) -> str:
    head = ["package", "mutants", "sampled", "killed", "timed out", "survived", "no tests", "no verdict",
            "other", "score (95% CI)", "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + [row(r) for r in records])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--package", action="append", help="a name from PACKAGES (repeatable); default: all")
    p.add_argument("--sample", type=int, default=20, help="mutants drawn per package (seeded)")
    p.add_argument("--names", nargs="+", help="run these mutants instead of a sample (one --package)")
    p.add_argument("--tests", nargs="+", help="run these tests instead of the package's")
    p.add_argument("--time-box", type=float, default=900, help="seconds per package before mutmut is stopped")
    p.add_argument("--reuse", action="store_true", help="keep the package's folder from an earlier run (its mutants, "
                   "mutmut's test stats and verdicts) and run only the sample's mutants that have no verdict yet")
    p.add_argument("--no-clean-run", action="store_true", help="skip mutmut's run of the sample's tests without a "
                   "mutant (with --reuse: the stats run already passed them)")
    p.add_argument("--table", action="store_true", help="print the table of the last runs and exit")
    p.add_argument("--list", action="store_true", help="print each package's files and exit")
    args = p.parse_args(argv)
    known = [n for n, _, _ in PACKAGES]
    names = args.package or known
    unknown = [n for n in names if n not in known]
    if unknown or (args.names and len(names) != 1):
        print(f"error: packages are {', '.join(known)}; --names needs exactly one --package", file=sys.stderr)
        return 2
    if args.list:
        for n in names:
            print(n, *package_files(n), sep="\n  ")
        return 0
    if args.table:
        records = [json.loads((WORK / slug(n) / "sample.json").read_text()) for n in names
                   if (WORK / slug(n) / "sample.json").exists()]
    else:
        records = []
        for n in names:
            records.append(run_package(n, args))
            print(records[-1]["package"], json.dumps(records[-1]["names"]), flush=True)
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
