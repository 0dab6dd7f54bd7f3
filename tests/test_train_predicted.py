"""Training on a datasheet GPU: the step's kernels (the optimizer really stepped), the schedule's hours and
dollars (closed forms), and zoo.compare --predict --metrics train's wiring."""
import gzip
import json
import math

import pytest
import torch
from torch import nn

from analysis.count.cost import GpuEmulation, run_train_step


def _ops(optimizer):
    layer = nn.Linear(100, 10, device="meta")
    counter, _, _ = run_train_step(layer, torch.empty(4, 100, device="meta"), gpu=GpuEmulation(None),
                                   traffic=True, optimizer=optimizer)
    return counter.traffic.op_list()


def test_the_optimizer_step_is_counted_as_torch_runs_it():
    """SGD with Nesterov momentum, parameter by parameter (torch.optim.sgd._single_tensor_sgd): zero_grad's
    zero_ and, per parameter, buf.mul_, buf.add_, grad.add(buf) and param.add_: more kernels, and for the
    weight (1,000 fp32 values) at least 4 passes over 4,000 bytes more traffic than without a step."""
    without = _ops(None)
    sgd = _ops(lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, foreach=False))
    kernels = lambda ops: sum(n for *_, n in ops)                                      # noqa: E731
    moved = lambda ops: sum(b * n for _, _, b, n in ops)                               # noqa: E731
    assert kernels(sgd) - kernels(without) >= 2 * 4
    assert moved(sgd) - moved(without) >= 4 * 2 * 4000


def test_schedule_steps_hours_and_dollars():
    """ceil(E x N / (B x K)) steps; wall hours = steps x (step + all-reduce); device hours x K; cost x price."""
    from analysis.predict.schedule import schedule

    r = schedule(0.1, (0.8, 1.25), batch=128, epochs=300, train_images=1281167, gpus=8, allreduce_s=0.01,
                 price_per_hour=2.5)
    steps = math.ceil(300 * 1281167 / 1024)
    assert r["train_steps"] == steps == 375342
    assert r["train_wall_hours"] == pytest.approx(steps * 0.11 / 3600)
    assert r["train_device_hours"] == pytest.approx(8 * steps * 0.11 / 3600)
    assert r["train_usd"] == pytest.approx(2.5 * 8 * steps * 0.11 / 3600)
    assert r["train_wall_hours_slow"] == pytest.approx(steps * (0.1 / 0.8 + 0.01) / 3600)   # p10: 0.8 x the rate
    assert r["train_wall_hours_overlapped"] == pytest.approx(steps * 0.1 / 3600)


def test_ring_allreduce_time():
    """2 (K - 1) / K x bytes over the per-direction bandwidth: A100's NVLink 3, 600 GB/s both ways."""
    from analysis.predict.devices import DEVICE_SHEETS
    from analysis.predict.schedule import allreduce_seconds

    a100 = DEVICE_SHEETS["A100"]
    assert allreduce_seconds(344_000_000, 1, a100) == 0
    assert allreduce_seconds(344_000_000, 8, a100) == pytest.approx(2 * 7 / 8 * 344e6 / 300e9)
    with pytest.raises(ValueError, match="no interconnect figure for RTX 3090"):
        allreduce_seconds(1, 2, DEVICE_SHEETS["RTX 3090"])


def test_training_rows_are_fitted_with_inference_and_held_out_by_source():
    """One calibration for inference and training: timm's RTX 3090 training tables and NVIDIA's one-GPU training
    throughput are fit rows, and their held-out (leave-one-source-out) statistics ship with the factors."""
    from importlib import resources

    data = json.loads(resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text())
    tables = data["held_out"]["tables"]
    assert any(" train " in t for t in tables if t.startswith("timm")) and "NVIDIA V100 SXM2 train AMP" in tables
    assert "c865028c34fc05cc7deea8e753b30d8cd1952591" in gzip.decompress(
        resources.files("analysis.predict").joinpath("data", "fit_rows.csv.gz").read_bytes()).decode()


def test_compare_predicts_training_and_refuses_bad_schedules(capsys):
    from zoo.compare.cli import main

    base = ["--models", "vit_ti16", "--resolutions", "64", "--batch-sizes", "4", "--predict", "A100",
            "--metrics", "train", "--dtype", "bf16", "--format", "json"]
    assert main(base + ["--epochs", "2", "--train-images", "100", "--gpus", "2", "--price-per-hour", "3"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["predicted"] and row["train_steps"] == math.ceil(2 * 100 / 8) and row["gpus"] == 2
    assert row["train_imgs_per_s_p10"] < row["train_imgs_per_s"] < row["train_imgs_per_s_p90"]
    assert row["train_usd"] == pytest.approx(row["train_device_hours"] * 3)
    assert main(base) == 0                                   # one GPU: no DistributedDataParallel buckets
    alone = json.loads(capsys.readouterr().out)[0]
    assert row["train_gpu_bytes"] - alone["train_gpu_bytes"] >= 4 * 5_600_000    # ViT-Ti: 5.7 M params (64 px)
    for bad in (["--epochs", "2"], ["--epochs", "0", "--train-images", "9"], ["--gpus", "x"]):
        assert main(base + bad) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert main(base[:-4] + ["--metrics", "throughput", "--epochs", "1", "--train-images", "9"]) == 2


def test_a_grouped_convolution_backward_is_depthwise():
    """convolution_backward takes `groups` as its 10th argument: a depthwise conv's backward kernels are
    depthwise_conv, not dense GEMMs (they run far below the GEMM peak)."""
    conv = nn.Conv2d(8, 8, 3, groups=8, device="meta")
    counter, _, _ = run_train_step(conv, torch.empty(2, 8, 16, 16, device="meta"), gpu=GpuEmulation(None),
                                   traffic=True)
    classes = {c for c, flops, _, _ in counter.traffic.op_list() if flops}
    assert "depthwise_conv_k3" in classes and not classes & {"matmul", "conv", "grouped_conv"}


def test_select_on_predicted_training(capsys):
    """zoo.select --predict --metrics train: a batch per GPU that does not fit excludes the model (training
    memory > the device's), --max-train-hours excludes on the schedule's wall hours; bad options exit 2."""
    from zoo.select.cli import main

    base = ["--predict", "L4", "--metrics", "train", "--models", "vit_ti16", "--resolution", "64", "--format", "json"]
    assert main(base + ["--batch-size", "4", "--epochs", "1", "--train-images", "40", "--max-train-hours", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["predicted"] and [r["model"] for r in result["shortlist"]] == ["vit_ti16"]
    assert main(base + ["--batch-size", "4", "--epochs", "1e5", "--train-images", "1281167",
                        "--max-train-hours", "1"]) == 0
    assert "wall hours > 1" in json.loads(capsys.readouterr().out)["excluded"][0]["excluded"]
    assert main([*base[:-4], "--resolution", "1024", "--batch-size", "4096", "--format", "json"]) == 0
    assert "training memory" in json.loads(capsys.readouterr().out)["excluded"][0]["excluded"]
    assert main(base + ["--max-train-hours", "3"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_tpu_v3_chip_is_the_cloud_pages_and_states_no_fp32():
    """cloud.google.com/tpu/docs/v3: two TensorCores per chip, 123 teraflops (bf16) per chip, HBM2 32 GiB at
    900 GBps. No fp32 figure: the vector classes are timed by their bytes alone, and --dtype fp32 is refused."""
    from analysis.predict.calibration import Setting, class_peaks
    from analysis.predict.devices import device_sheet, sheet_peak

    tpu = device_sheet("tpuv3")
    assert (tpu.name, tpu.kind, tpu.cores_per_chip) == ("TPU v3", "tpu", 2)
    assert tpu.peak_flops == {"bf16": 123e12} and tpu.mem_bandwidth == 900e9 and tpu.memory_bytes == 32 * 1024 ** 3
    ops = [(c, 1, 1, 1) for c in ("matmul", "attention", "norm", "elementwise")]
    peaks = class_peaks(ops, Setting(tpu, "bf16"))
    assert peaks["matmul"] == peaks["attention"] == 123e12 and peaks["norm"] == peaks["elementwise"] == math.inf
    with pytest.raises(ValueError):
        sheet_peak(tpu, "fp32")


def test_a_tpu_training_row_is_an_extrapolation_in_core_days(capsys, monkeypatch):
    """The ViT paper's unit (section 4.2): TPU v3 cores (2 per chip) x days, so core-days = chip-hours x 2 / 24.
    XLA has no fused attention kernel: the step is counted with attention op by op. Whether it fits is left
    open (XLA plans its own memory). Inference on a TPU, fp32 and --gpus without an interconnect exit 2."""
    from zoo.compare.cli import main
    from zoo.predict import train as train_predicted

    asked = []
    counted = train_predicted.train_step_ops
    monkeypatch.setattr(train_predicted, "train_step_ops",
                        lambda request, foreach=True, fused_attention=True:
                        asked.append(fused_attention) or counted(request, foreach, fused_attention))
    base = ["--models", "vit_ti16", "--resolutions", "64", "--batch-sizes", "4", "--predict", "TPU v3", "--dtype",
            "bf16", "--no-save"]
    assert main(base + ["--metrics", "train", "--epochs", "2", "--train-images", "100", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert asked == [False] and row["train_attention"] == "op by op" and row["train_fits_memory"] is None
    assert "EXTRAPOLATION" in row["train_band_from"] and row["train_steps"] == 50
    for end in ("", "_fast", "_slow"):
        assert row[f"train_core_days{end}"] == pytest.approx(row[f"train_device_hours{end}"] * 2 / 24)
    assert main(base + ["--metrics", "train", "--epochs", "2", "--train-images", "100"]) == 0
    assert "TPU core-days" in capsys.readouterr().out
    for bad in (base, [*base[:-3], "fp32", "--metrics", "train"],
                base + ["--metrics", "train", "--epochs", "2", "--train-images", "100", "--gpus", "4"]):
        assert main(bad) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_predict_takes_a_whole_segmenter_or_detector(capsys):
    """--predict with --segmenter / --detector times the whole model (issue 40, item 3): a row is labelled with its
    task, and the whole model, which holds the backbone, takes longer than the backbone alone; its training step
    too. --slide (counted, not timed) is refused in one line."""
    from zoo.compare.cli import main

    base = ["--models", "resnet50", "--resolutions", "64", "--batch-sizes", "1", "--predict", "V100", "--dtype",
            "fp16", "--no-save", "--format", "json"]
    rows = {}
    for task, metrics in (([], "throughput"), ([], "train"), (["--segmenter", "upernet"], "throughput"),
                          (["--segmenter", "upernet"], "train"), (["--detector", "maskrcnn"], "throughput")):
        assert main(base + task + ["--metrics", metrics]) == 0
        rows[tuple(task[1:]), metrics] = json.loads(capsys.readouterr().out)[0]
    for task in ("upernet", "maskrcnn"):
        whole, alone = rows[(task,), "throughput"], rows[(), "throughput"]
        assert whole["task"] == task and "task" not in alone and whole["latency_ms"] > alone["latency_ms"]
    trained = rows[("upernet",), "train"]
    assert trained["task"] == "upernet" and trained["train_step_ms"] > rows[(), "train"]["train_step_ms"]
    from zoo.report.predicted_gpu import predicted_table          # a saved row, as the report shows it

    assert "resnet50 + upernet" in predicted_table([{**rows[("upernet",), "throughput"], "saved_by": "zoo.compare"}])
    assert main(base[:-2] + ["--segmenter", "upernet"]) == 0
    assert "| resnet50 + upernet | 64 |" in capsys.readouterr().out
    assert main(base + ["--segmenter", "upernet", "--slide", "64,32", "--metrics", "cost"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_training_steps_gemm_flops_are_the_vit_papers():
    """The ViT paper's Table 6 (arXiv:2010.11929v2): ViT-B/32 pre-trained 7 epochs on JFT's 303M images (section
    4.1) costs 55 exaFLOPs, 25.9 GFLOPs per image (+-0.9%: the table rounds to whole exaFLOPs). The step the TPU
    prediction times (attention op by op) counts its GEMMs' FLOPs (forward and backward) to that."""
    from zoo.runs.request import Request
    from zoo.predict.train import train_step_ops

    ops = train_step_ops(Request("vit_b32", 224, 1, "bf16", train=True, optimizer="adamw"), fused_attention=False)
    gemm = sum(flops * n for c, flops, _, n in ops if c in ("matmul", "conv"))
    assert gemm == pytest.approx(55e18 / (7 * 303e6), rel=0.02)
