"""Hostile options and environment (issue 34, findings 7, 8, 9): --predict refuses what it does not model, the
host-memory guard covers batch 1 and its override variable is checked by name, and naming ONNX Runtime
writes nothing outside --out and the user cache."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, call_main

from analysis.timing import host_memory
from zoo.runs.tasks import Task, run_task

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("extra, named", [(["--segmenter", "upernet", "--slide", "512,341"], "--slide"),
                                          (["--metrics", "cost,train"], "--metrics train"),
                                          (["--backend", "onnxruntime"], "--backend onnxruntime")])
def test_predict_refuses_what_it_does_not_model(extra, named):
    done = call_main("zoo.compare", "--models", "vit_b16", "--predict", "H100", *extra)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr and "--predict" in done.stderr


@pytest.mark.parametrize("value", ["lots", "-1", "1.5e9", "0x10"])
@pytest.mark.parametrize("module, args", [("zoo.compare", ["--models", "deit_ti", "--metrics", "throughput"]),
                                          ("zoo.select", ["--time"])])
def test_the_memory_override_is_checked_by_name(monkeypatch, tmp_path, value, module, args):
    monkeypatch.setenv(host_memory.OVERRIDE_ENV, value)
    done = call_main(module, *[a for a in args if a != "--time"], "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert host_memory.OVERRIDE_ENV in done.stderr and not (tmp_path / "out").exists()


def test_batch_1_past_the_available_memory_is_refused_naming_need_and_limit(monkeypatch):
    """convnext_t at 2048 px: its counted batch-1 peak alone is far past 256 MiB; before, it ran anyway."""
    monkeypatch.setenv(host_memory.OVERRIDE_ENV, str(256 << 20))
    row = run_task(Task.named("throughput", "convnext_t", 2048, device="cpu", quick=True, iters=1, threads=1), macs=1,
                   peak={"peak_flops": 1e9, "peak_kernel": "mm_test"})
    assert row["failed"].startswith("MemoryError: host memory: batch 1 needs"), row["failed"]
    assert "256 MiB available" in row["failed"] and "\n" not in row["failed"]


CHILD = """
import os, sys
from zoo.compare.cli import parse
parse(["--models", "deit_ti", "--metrics", "throughput", "--backend", "onnxruntime", "--no-save"])
print("imported on check:", "onnxruntime" in sys.modules)
from zoo.runs.timed import import_onnxruntime
import_onnxruntime()
print("imported for timing:", "onnxruntime" in sys.modules)
"""


def test_onnxruntime_is_imported_only_to_time_and_writes_only_in_the_user_cache(tmp_path):
    pytest.importorskip("onnxruntime")
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env.update(HOME=str(home), ARCHZOO_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "zoo.compare", "--models", "deit_ti", "--metrics", "throughput",
                           "--backend", "onnxruntime", "--dtype", "bf16", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=HANG_GUARD_S)
    assert done.returncode == 2 and "--backend onnxruntime" in done.stderr             # refused, and ...
    assert list(home.iterdir()) == []                                                   # ... nothing under ~
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    assert "imported on check: False" in done.stdout and "imported for timing: True" in done.stdout
    assert list(home.iterdir()) == []
    assert (cache / "onnxruntime").is_dir()


def test_a_cnn_with_an_extra_stride_under_a_detector_gets_a_hint_for_cnns_not_vits():
    from analysis.size import Size
    from zoo.errors import ZooError
    from zoo.models.detectors import create_detector

    with pytest.raises(ZooError) as refused:
        create_detector("timm:resnet18", "maskrcnn", Size(224, 224), device="meta")
    assert "[2, 4, 8, 16, 32]" in str(refused.value) and "plain ViT" not in str(refused.value)
    assert "stride 2" in str(refused.value) and "resnet50" in str(refused.value)
    with pytest.raises(ZooError, match="plain ViT: use vitdet_"):
        create_detector("vit_ti16", "maskrcnn", Size(224, 224), device="meta")


@pytest.mark.parametrize("args, said", [
    (["zoo.select", "--models", "deit_ti", "--max-latency-ms", "50", "--save-plan", ""],
     "--save-plan: an empty FILE name"),
    (["zoo.select", "--from-plan", ""], "--from-plan: an empty FILE name"),
    (["zoo.compare", "--models", "deit_ti", "--predict", "H100", "--metrics", "train", "--out", "OUT"],
     "--out: --predict with --metrics train prints its estimate and writes no rows; drop --out"),
])
def test_an_option_that_cannot_apply_is_refused_not_ignored(tmp_path, monkeypatch, args, said):
    """Issue 54: --save-plan '' was taken for no plan (the question answered, and timed, exit 0), and --out beside a
    training prediction that writes nothing was accepted."""
    monkeypatch.setenv("ARCHZOO_DATA_DIR", str(tmp_path / "data"))
    module, *rest = args
    done = call_main(module, *[str(tmp_path / "out") if a == "OUT" else a for a in rest], cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"{module}: error: {said}\n"
    assert list(tmp_path.iterdir()) == []
