"""archzoo writes only regular files inside its folder, never tears a row, and ends cleanly on SIGTERM:
real symlinks, FIFOs and folders in the way, a real 16 KiB filesystem, real processes and signals. Refusals
call the command's main() in this process (cli.call_main); exit statuses of real processes stay subprocesses."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli import HANG_GUARD_S, call_main, run_cli
from zoo.store.safe_io import StrictJSONError, strict_loads
from zoo.store.store import ResultStore
from zoo.runs.tasks import Task
from committed import committed_text

COST = ["--metrics", "cost", "--resolutions", "224"]


def one_error_line(result, code=2):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and len(lines) == 1 and lines[0].startswith("zoo."), result.stderr


@pytest.mark.parametrize("name", ["cost.jsonl", ".lock"])
def test_a_symlinked_results_file_or_lock_is_refused_and_its_target_untouched(tmp_path, name):
    target = tmp_path / "outside.txt"
    target.write_text("precious\n")
    (tmp_path / "out" / "results").mkdir(parents=True)
    (tmp_path / "out" / "results" / name).symlink_to(target)
    result = call_main("zoo.compare", "--models", "vit_ti16", *COST, "--out", str(tmp_path / "out"))
    one_error_line(result)
    assert "symlink" in result.stderr and target.read_text() == "precious\n"


def test_a_dangling_symlink_a_fifo_and_a_folder_are_refused_before_any_work(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "cost.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(results / "throughput.jsonl")
    (results / ".lock").mkdir()
    for blocker, what in [("cost.jsonl", "symlink"), ("throughput.jsonl", "FIFO"), (".lock", "folder")]:
        run = run_cli if what == "FIFO" else call_main    # a subprocess, with a timeout, where opening could block
        result = run("zoo.compare", "--models", "vit_ti16", *COST, "--out", str(tmp_path), timeout=HANG_GUARD_S)
        one_error_line(result)
        assert f"{blocker} is a {what}" in result.stderr
        path = results / blocker
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    assert not (tmp_path / "nowhere").exists()


def test_a_symlinked_results_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results").symlink_to(elsewhere)
    one_error_line(call_main("zoo.compare", "--models", "vit_ti16", *COST, "--out", str(tmp_path / "out")))
    assert list(elsewhere.iterdir()) == []


def test_the_store_never_appends_through_a_symlink(tmp_path):
    target = tmp_path / "outside.jsonl"
    target.write_text("")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "cost.jsonl").symlink_to(target)
    from test_store import row
    from zoo.store.store import StoreWriteError

    with pytest.raises(StoreWriteError):
        ResultStore(tmp_path).append(row("a"))
    assert target.read_text() == ""


def test_report_files_that_are_symlinks_are_replaced_never_followed(tmp_path):
    target = tmp_path / "outside.html"
    target.write_text("precious\n")
    results = tmp_path / "run" / "results"
    results.mkdir(parents=True)
    (results / "cost.jsonl").write_text(committed_text("results/cost.jsonl").splitlines()[0] + "\n")
    reports = tmp_path / "run" / "reports"
    reports.mkdir()
    (reports / "index.html").symlink_to(target)
    (reports / "cost.md").symlink_to(target)
    result = call_main("zoo.report", "--results", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert target.read_text() == "precious\n"
    assert not (reports / "index.html").is_symlink() and "<html" in (reports / "index.html").read_text().lower()
    assert not (reports / "cost.md").is_symlink()


def test_a_folder_in_place_of_a_report_file_is_refused(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "cost.jsonl").write_text("")
    (tmp_path / "reports" / "index.html").mkdir(parents=True)
    result = run_cli("zoo.report", "--results", str(tmp_path))
    one_error_line(result)
    assert "index.html is a folder" in result.stderr


def _fill(path: Path) -> None:
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError:
            pass


def test_a_full_disk_cuts_the_row_back_and_exits_1_with_one_line(small_fs):
    results = small_fs / "results"
    results.mkdir()
    cost = results / "cost.jsonl"
    first = committed_text("results/cost.jsonl").splitlines()[0] + "\n"
    pad = 4096 - 100 - len(first) % 4096   # a blank line (readers skip it) so 100 bytes of its page are free
    cost.write_text(first + " " * (pad - 1) + "\n")
    _fill(small_fs / "filler")             # the rest of the filesystem: part of the next row fits, not all
    before = cost.read_bytes()
    result = run_cli("zoo.compare", "--models", "vit_ti16", *COST, "--out", str(small_fs))
    one_error_line(result, code=1)
    assert "disk is full" in result.stderr
    assert cost.read_bytes() == before     # cut back to its length before the row: no half row
    (small_fs / "filler").unlink()
    result = call_main("zoo.compare", "--models", "vit_ti16", *COST, "--out", str(small_fs), "--resume")
    assert result.returncode == 0, result.stderr
    assert len(ResultStore(small_fs).rows()) == 2


def _wait_for(path: Path, count: int, proc: subprocess.Popen, timeout: float = HANG_GUARD_S) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().count("\n") >= count):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "no rows appeared"
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_sigterm_exits_143_with_one_line_keeps_rows_and_ends_the_measuring_child(tmp_path):
    cmd = [sys.executable, "-m", "zoo.compare", "--models", "vit_ti16,deit_ti,deit_s,resnet50,convnext_t,swin_t",
           *COST, "--executor", "subprocess", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    _wait_for(tmp_path / "results" / "cost.jsonl", 1, proc)
    deadline = time.monotonic() + 60
    while not _children(proc.pid) and time.monotonic() < deadline:   # the next measurement's process
        time.sleep(0.02)
    children = _children(proc.pid)
    assert children, "no measuring child process to end"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and lines[-1].startswith("zoo.compare: terminated (SIGTERM)")
    assert not any(Path(f"/proc/{c}").exists() and "zombie" not in Path(f"/proc/{c}/status").read_text()
                   for c in children)
    kept = [json.loads(line) for line in (tmp_path / "results" / "cost.jsonl").read_text().splitlines()]
    assert 1 <= len(kept) < 6 and all(r["model"] for r in kept)


@pytest.mark.parametrize("line", ["[" * 100_000 + "]" * 100_000, '{"a": NaN}', '{"a": Infinity}', "1" * 401,
                                  '{"a": 1e400}', '{"a": -Infinity}'])
def test_strict_json_refuses_what_python_json_lets_through(line):
    json.loads(line) if line[0] != "[" else None      # python's json takes these (or recurses out)
    with pytest.raises(StrictJSONError):
        strict_loads(line)


def test_crafted_lines_are_skipped_and_named_by_every_reader(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    good = committed_text("results/cost.jsonl").splitlines()[0]
    row = json.loads(good)
    crafted = ["[" * 100_000 + "]" * 100_000, good.replace(f'"macs": {row["macs"]}', '"macs": NaN'),
               good.replace(f'"macs": {row["macs"]}', '"macs": ' + "9" * 400),
               good.replace(f'"params": {row["params"]}', '"params": -1'),
               json.dumps({**row, "settings": {}}), good]
    (results / "cost.jsonl").write_text("\n".join(crafted) + "\n")
    (results / "peaks.json").write_text("[" * 100_000)
    store = ResultStore(tmp_path)
    assert len(store.rows(warn=False)) == 1 and len(store.bad_lines) == 5
    for module, args in [("zoo.report", ["--results", str(tmp_path)]),
                         ("zoo.compare", ["--models", row["model"], *COST, "--resume", "--format", "json",
                                          "--out", str(tmp_path)])]:
        result = call_main(module, *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("damaged", [{"peak_flops": "fast", "peak_kernel": "mm_1024"}, {"peak_flops": -1.0},
                                     [1, 2], {"peak_flops": 1e400}, None])
def test_a_damaged_peak_entry_is_dropped_and_probed_again(tmp_path, monkeypatch, damaged, kept_bandwidth):
    from zoo.runs import peaks

    task = Task.named("throughput", "deit_ti", 224, device="cpu", threads=1)
    text = json.dumps({peaks.peak_key(task): damaged}).replace("Infinity", "1e400")
    (tmp_path / peaks.PEAKS_FILE).write_text(text)
    probed = {"peak_flops": 2e11, "peak_kernel": "mm_2048"}
    monkeypatch.setattr(peaks, "measure_peak_flops", lambda *a, **k: dict(probed))
    def probe_of(entry: dict) -> dict:     # the probe itself: not its provenance or the bandwidth
        return {k: v for k, v in entry.items()
                if k not in ("peak_provenance", "peak_probe") and not k.startswith(("bandwidth", "mem_bandwidth"))}

    assert probe_of(peaks.PeakCache(tmp_path).get(task)) == probed
    assert probe_of(json.loads((tmp_path / peaks.PEAKS_FILE).read_text())[peaks.peak_key(task)]) == probed


def test_a_symlinked_peak_cache_is_replaced_not_followed(tmp_path, monkeypatch, kept_bandwidth):
    from zoo.runs import peaks

    target = tmp_path / "outside.json"
    target.write_text("precious\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / peaks.PEAKS_FILE).symlink_to(target)
    monkeypatch.setattr(peaks, "measure_peak_flops", lambda *a, **k: {"peak_flops": 1e9, "peak_kernel": "mm_8"})
    peaks.PeakCache(tmp_path / "results").get(Task.named("throughput", "deit_ti", 224, device="cpu", threads=1))
    assert target.read_text() == "precious\n" and not (tmp_path / "results" / peaks.PEAKS_FILE).is_symlink()


def test_select_and_report_end_on_sigterm_with_one_line_and_143(capsys):
    from zoo.console.signals import handles_sigterm

    def main_killed_midway(argv):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        return 0

    before = signal.getsignal(signal.SIGTERM)
    assert handles_sigterm("zoo.select")(main_killed_midway)([]) == 143       # argv given: as tests call main()
    assert capsys.readouterr().err == "zoo.select: terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is before          # the handler is the command's only
