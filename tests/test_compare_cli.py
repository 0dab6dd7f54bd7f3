"""`python -m zoo.compare` end to end: output contracts, bad input, resuming. A subprocess where the process
is what is tested (stdout holding only JSON, exit status, a killed run); elsewhere the same main() in this
process (cli.call_main)."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import torch

from cli import HANG_GUARD_S, call_main, run_cli
from zoo.compare.cli import main
from zoo.store.schema import SCHEMA_VERSION

pytestmark = pytest.mark.usefixtures("kept_peaks")     # timed runs probe no GEMM peak (conftest.py)

# ViT-Ti/16 at 224 in closed form (seed notes, ex. 3.5.2 with d = 192, N = 197, 12 layers):
# 12 * (12 N d^2 + 2 N^2 d) + patch embedding 196 * 768 * d + head d * 1000
D, N = 192, 197
VIT_TI16_MACS = 12 * (12 * N * D * D + 2 * N * N * D) + 196 * 16 * 16 * 3 * D + D * 1000


def test_json_contract_end_to_end(tmp_path):
    result = run_cli("zoo.compare", "--models", "vit_ti16,resnet50", "--quick", "--threads", "1",
                     "--format", "json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)  # stdout holds nothing but the JSON array
    assert [r["model"] for r in records] == ["vit_ti16", "resnet50"]
    vit = records[0]
    for field in ("model", "family", "img_size", "batch_size", "tokens", "params", "macs", "attn_macs",
                  "attn_share", "act_peak_bytes", "train_macs", "uncounted_ops", "imgs_per_s", "latency_ms_p50",
                  "latency_ms_p90", "latency_ms_p99", "cv", "device", "dtype", "threads", "peak_flops", "mfu",
                  "requested_batch_size", "ran_batch_size", "error", "top1", "pretraining"):
        assert field in vit, field
    assert vit["macs"] == VIT_TI16_MACS and vit["tokens"] == 197 and vit["uncounted_ops"] == []
    assert vit["imgs_per_s"] > 0 and vit["threads"] == 1 and records[1]["tokens"] is None
    saved = [json.loads(line) for line in (tmp_path / "results" / "cost.jsonl").read_text().splitlines()]
    assert {r["model"] for r in saved} == {"vit_ti16", "resnet50"}
    assert all(r["schema"] == SCHEMA_VERSION and r["software"]["torch"] for r in saved)
    assert (tmp_path / "results" / "throughput.jsonl").exists()


def test_table_markdown_csv_and_no_save(tmp_path):
    for fmt, marker in (("table", "vit_ti16"), ("markdown", "| vit_ti16 |"), ("csv", "macs")):
        result = call_main("zoo.compare", "--models", "vit_ti16", "--metrics", "cost", "--format", fmt,
                         "--no-save", cwd=tmp_path)
        assert result.returncode == 0 and marker in result.stdout, result.stderr
    assert not (tmp_path / "results").exists()


def test_a_resolution_some_models_cannot_take_is_skipped_for_them(tmp_path):
    result = call_main("zoo.compare", "--models", "vit_b16,resnet50", "--resolutions", "200", "--metrics", "cost",
                     "--format", "json", "--no-save")
    assert result.returncode == 0, result.stderr
    by_model = {r["model"]: r for r in json.loads(result.stdout)}
    assert "multiple of 16" in by_model["vit_b16"]["skipped"]
    assert by_model["resnet50"]["macs"] > 0 and "skipped" not in by_model["resnet50"]
    table = call_main("zoo.compare", "--models", "vit_b16,resnet50", "--resolutions", "200", "--metrics", "cost",
                    "--no-save")
    assert "skipped" in table.stdout


BAD_INPUT = [
    (["--models", "vit_b17"], "vit_b16"),
    (["--models", "swin_zz*"], "matches no registered model"),
    (["--models", "vit_b16,,swin_t"], "empty"),
    (["--models", ""], "empty"),
    (["--models", "vit_b16", "--resolutions", "100"], "multiple of 16"),
    (["--models", "vit_b16", "--resolutions", "224.5"], "not an integer"),
    (["--models", "vit_b16", "--resolutions", "0"], "not positive"),
    (["--models", "vit_b16", "--batch-sizes", "-2"], "not positive"),
    (["--models", "vit_b16", "--batch-sizes", "1.5"], "not an integer"),
    (["--models", "vit_b16", "--batch-sizes", "two"], "not an integer"),
    (["--models", "vit_b16", "--metrics", "cost,speed"], "speed"),
    (["--models", "vit_b16", "--format", "xml"], "xml"),
    (["--models", "vit_b16", "--dtype", "int3"], "int3"),
    (["--models", "vit_b16", "--device", "tpu"], "tpu"),
    (["--models", "vit_b16", "--threads", "0"], "not positive"),
    (["--resolutions", "224"], "--models"),
]


@pytest.mark.parametrize("args, expected", BAD_INPUT)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, args, expected):
    """In-process for speed; the same main() the console script and `python -m` call."""
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0]
    assert captured.out == "" and not out.exists()


@pytest.mark.parametrize("args", [BAD_INPUT[0][0], BAD_INPUT[7][0]])
def test_bad_input_as_a_subprocess_has_no_traceback(tmp_path, args):
    result = run_cli("zoo.compare", *args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_resolution_no_model_can_take_states_rules_and_nearest_sizes():
    result = call_main("zoo.compare", "--models", "vit_b16,swin_t", "--resolutions", "100", "--no-save")
    assert result.returncode == 2
    assert "multiple of 16" in result.stderr and "96, 112" in result.stderr and "multiple of 32" in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_usage_error():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--device", "cuda", "--no-save")
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr


def test_unwritable_out_is_a_usage_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    result = call_main("zoo.compare", "--models", "vit_ti16", "--metrics", "cost", "--out", str(blocker / "sub"))
    assert result.returncode == 2 and "--out" in result.stderr and blocker.read_text() == "not a folder"


def _processes_outliving(marker: str, wait_s: float = 10.0) -> list[int]:
    """Pids whose command line names `marker` still alive after up to wait_s (Linux /proc; [] elsewhere)."""
    proc = pathlib.Path("/proc")
    deadline = time.time() + wait_s
    while True:
        alive = []
        for entry in proc.glob("[0-9]*") if proc.is_dir() else []:
            try:
                if marker.encode() in (entry / "cmdline").read_bytes() and int(entry.name) != os.getpid():
                    alive.append(int(entry.name))
            except OSError:
                continue
        if not alive or time.time() > deadline:
            return alive
        time.sleep(0.2)


# zoo.compare with an injected fault: the run hangs right after its second row is on disk, until killed
# (the counting pool's workers meanwhile alive), so the kill lands midway whatever the machine's speed.
HANG_AFTER_TWO_ROWS = """
import sys, time
from zoo.store.store import ResultStore
append = ResultStore.append
def append_then_hang(self, row):
    append(self, row)
    if self.path(row["kind"]).read_text().count("\\n") == 2:
        time.sleep(3600)
ResultStore.append = append_then_hang
from zoo.compare.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_interrupted_run_resumes_without_losing_or_repeating_rows(tmp_path):
    models = "vit_ti16,deit_ti,resnet50,convnext_t,swin_t,deit_s"
    cmd = [sys.executable, "-c", HANG_AFTER_TWO_ROWS, "--models", models, "--metrics", "cost", "--out",
           str(tmp_path), "--format", "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows_file = tmp_path / "results" / "cost.jsonl"
    deadline = time.time() + HANG_GUARD_S                     # a hang guard: a loaded machine may take minutes
    while time.time() < deadline and proc.poll() is None and \
            not (rows_file.exists() and rows_file.read_text().count("\n") >= 2):
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before its second row"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = rows_file.read_text().splitlines()
    assert len(before) == 2, "the run is killed while it hangs after its second row"
    assert not _processes_outliving(str(tmp_path)), "counting workers must die with the run that started them"
    result = call_main("zoo.compare", *cmd[3:], "--resume")    # resuming is no process's business: this one's
    assert result.returncode == 0, result.stderr
    after = rows_file.read_text().splitlines()
    assert after[:len(before)] == before                       # nothing already measured was lost
    assert sorted(json.loads(line)["model"] for line in after) == sorted(models.split(","))  # none repeated
    assert len(json.loads(result.stdout)) == 6                 # the report covers all, old rows included
    again = call_main("zoo.compare", *cmd[3:], "--resume")
    assert again.returncode == 0 and rows_file.read_text().splitlines() == after
