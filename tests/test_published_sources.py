"""The published fit sources (benchmarks/data/sources, benchmarks/published_sources.py): every row cited and
sane, NVIDIA's throughput and latency columns consistent, spot checks read by eye from the sources, the
parsers on small hand-written inputs, and the extraction script's refusal of bad input."""
from __future__ import annotations

import math
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))      # benchmarks/ is not an installed package

import extract_sources  # noqa: E402
import published_sources  # noqa: E402
import source_nvidia_tables  # noqa: E402
import source_timm  # noqa: E402

TIMM_MIRROR = Path("/work/.mirror/huggingface+pytorch-image-models/repo")
NVIDIA_MIRROR = Path("/work/.mirror/NVIDIA+DeepLearningExamples/repo")


@pytest.fixture(scope="module")
def timm():
    return published_sources.rows("timm")


@pytest.fixture(scope="module")
def nvidia():
    return published_sources.rows("nvidia_dle")


def test_every_row_cites_repository_commit_file_and_line(timm, nvidia):
    for row in timm + nvidia:
        assert row["repo"] in ("huggingface/pytorch-image-models", "NVIDIA/DeepLearningExamples")
        assert len(row["commit"]) == 40 and int(row["commit"], 16) >= 0
        assert row["file"].endswith((".csv", "README.md")) and isinstance(row["line"], int) and row["line"] >= 2
    assert published_sources.citation(timm[0]).startswith("huggingface/pytorch-image-models@")


def test_no_figure_is_given_twice(timm, nvidia):
    assert len({(r["file"], r["line"]) for r in timm}) == len(timm)
    versions = {(r["file"], r["commit"]) for r in timm}
    assert len({file for file, _ in versions}) == len(versions)          # one version of each timm file
    cells = Counter((r["file"], r["commit"], r["line"], r["column"]) for r in nvidia)
    assert cells.most_common(1)[0][1] == 1


def test_values_are_positive_and_finite(timm, nvidia):
    for row in timm:
        for name in ("samples_per_s", "batch_size", "img_size", "step_time_ms", "params_m"):
            value = row[name]
            assert value is not None and math.isfinite(value) and value > 0, (row["file"], row["line"], name)
        assert row["gmacs"] is None or (math.isfinite(row["gmacs"]) and row["gmacs"] >= 0)
    for row in nvidia:
        assert math.isfinite(row["value"]) and row["value"] > 0, (row["file"], row["line"])
        assert row["unit"] == ("ms" if row["metric"].startswith("latency") else "img/s")
        assert row["batch_size"] is None or row["batch_size"] >= 1


def test_nvidia_throughput_agrees_with_batch_over_mean_latency(nvidia):
    """Where a table gives both, batch / mean latency is within 0.6x-1.25x of the throughput column, median
    0.90-1.05 (seen: p10 0.85, median 0.97, p90 1.01). Not closer because NVIDIA's 'Throughput Avg' is the mean
    of per-iteration img/s while 'Latency Avg' is the mean time, whose first iterations (cudnn.benchmark's
    search, no warm-up is dropped) lift it: at large batches the p95 latency often sits below the mean."""
    by_line = {}
    for r in nvidia:
        by_line.setdefault((r["file"], r["commit"], r["line"]), {})[r["metric"]] = r
    ratios = [c["throughput_avg"]["batch_size"] / (c["latency_avg"]["value"] / 1e3) / c["throughput_avg"]["value"]
              for c in by_line.values() if "throughput_avg" in c and "latency_avg" in c]
    assert len(ratios) > 500
    assert all(0.6 <= x <= 1.25 for x in ratios), (min(ratios), max(ratios))
    assert 0.90 <= statistics.median(ratios) <= 1.05


# read by eye: `git show COMMIT:FILE | sed -n LINEp` in the mirrors
NVIDIA_SPOT = [
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 630, "latency_avg", 10.37),       # V100 16GB FP32, batch 1
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 630, "throughput_avg", 96),
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 653, "latency_p95", 75.3),        # V100 AMP, batch 256
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 670, "latency_p99", 625.21),      # T4 FP32, batch 256
    ("ConvNets/efficientnet/README.md", "5843f4e5", 726, "throughput_avg", 1439),     # A100 AMP widese-b4 256
    ("ConvNets/efficientnet/README.md", "5843f4e5", 737, "latency_p99", 14.11),       # V100 FP32 b0, batch 1
    ("ConvNets/resnet50v1.5/README.md", "5562ab76", 468, "latency_p50", 6.91),        # 2019 FP32 50.0% column
    ("ConvNets/resnet50v1.5/README.md", "5562ab76", 518, "throughput_p99", 1533),     # 2019 AMP @99.0%
    ("RN50v1.5/README.md", "20f09772", 285, "throughput", 131.8),                     # 2019 mixed precision img/s
]


@pytest.mark.parametrize("file, commit, line, metric, value", NVIDIA_SPOT)
def test_nvidia_spot_checks(nvidia, file, commit, line, metric, value):
    found = [r for r in nvidia if r["file"].endswith(file) and r["commit"].startswith(commit) and r["line"] == line
             and r["metric"] == metric and r["value"] == value]
    assert len(found) == 1, (file, commit, line, metric)


@pytest.mark.parametrize("file, commit, line, model, n_gpus, precision, value, gpu, memory", [
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 598, "resnet50", 1, "TF32", 938, "A100", 80),
    ("ConvNets/resnet50v1.5/README.md", "5843f4e5", 598, "resnet50", 1, "AMP", 2470, "A100", 80),
    ("ConvNets/efficientnet/README.md", "5843f4e5", 589, "efficientnet-b0", 1, "AMP", 2489, "A100", 80),
    ("ConvNets/README.md", "46ff3707", 68, "resnet50", 8, "TF32", 5322.10, "A100", 40),   # the summary: 8 GPUs
    ("RN50v1.5/README.md", "20f09772", 268, "resnet50", 1, "FP32", 363.1, "V100", 16),
    ("GPUNet/README.md", "1dbad27d", 435, "GPUNet-2", 8, "AMP", 2690, "A100", 80),
])
def test_nvidia_training_spot_checks(nvidia, file, commit, line, model, n_gpus, precision, value, gpu, memory):
    found = [r for r in nvidia if r["file"].endswith(file) and r["commit"].startswith(commit) and r["line"] == line
             and r["precision"] == precision]
    assert [(r["model"], r["n_gpus"], r["value"], r["gpu"], r["gpu_memory_gb"], r["mode"]) for r in found] == \
        [(model, n_gpus, value, gpu, memory, "train")]


@pytest.mark.parametrize("file, line, model, samples_per_s, step_ms, batch, gmacs", [
    ("benchmark-infer-amp-nchw-pt110-cu113-rtx3090.csv", 204, "resnet50", 2695.53, 379.874, 1024, 4.11),
    ("benchmark-infer-amp-nhwc-pt113-cu117-rtx3090.csv", 567, "vit_base_patch16_224", 1210.28, 846.074, 1024, 17.58),
    ("benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv", 237, "resnet50", 826.06, 618.983, 512, None),
    ("benchmark-infer-amp-nchw-pt291-cu130-5090-dynamo.csv", 794, "convnext_tiny", 5786.63, 176.935, 1024, 7.39),
])
def test_timm_spot_checks(timm, file, line, model, samples_per_s, step_ms, batch, gmacs):
    row = next(r for r in timm if r["file"] == f"results/{file}" and r["line"] == line)
    assert (row["model"], row["samples_per_s"], row["step_time_ms"], row["batch_size"], row["gmacs"]) == \
        (model, samples_per_s, step_ms, batch, gmacs)


def test_timm_recipe_is_the_file_name(timm):
    row = next(r for r in timm if r["file"].endswith("pt110-cu113-rtx3090.csv") and "train-amp-nhwc" in r["file"])
    assert (row["torch"], row["cuda"], row["mode"], row["precision"], row["memory_format"], row["compiled"]) == \
        ("1.10", "11.3", "train", "amp_fp16", "nhwc", "eager")
    assert row["commit"].startswith("eac2df3d")         # the last version: deleted in 5e7d47ca
    bf16 = next(r for r in timm if "infer-bf16-nchw-pt291-cu130-pro6000maxq-dynamo" in r["file"])
    assert (bf16["torch"], bf16["cuda"], bf16["precision"], bf16["compiled"]) == ("2.9.1", "13.0", "bf16", "dynamo")
    assert not any("-cpu-" in r["file"] for r in timm)
    old = {r["latest_for_recipe"] for r in timm if "model_benchmark_" in r["file"]}
    assert old == {"no"}


@pytest.mark.parametrize("digits, torch", [("110", "1.10"), ("113", "1.13"), ("210", "2.1.0"), ("240", "2.4.0"),
                                           ("291", "2.9.1")])
def test_timm_torch_digits(digits, torch):
    assert source_timm.torch_version(digits) == torch


def test_timm_file_names_parse_and_cpu_is_out():
    assert source_timm.recipe("results/benchmark-infer-fp32-nchw-pt240-cpu-i7_12700h-dynamo.csv") is None
    assert source_timm.recipe("results/results-imagenet.csv") is None
    stated = source_timm.recipe("results/benchmark-infer-amp_bf16-nchw-pt291-cu130-pro6000maxq-dynamo.csv")
    assert (stated["device"], stated["precision"], stated["cuda"]) == ("pro6000maxq", "amp_bf16", "13.0")


README = """\
## Results

Our results were obtained by running the applicable training script in the pytorch-21.03 NGC container.

##### Inference performance: NVIDIA DGX-1 (1x V100 16GB)

###### FP32 Inference Latency

| **Batch Size** | **Throughput Avg** | **Latency Avg** | **Latency 95%** | **Latency 99%** |
|:-:|:-:|:-:|:-:|:-:|
| 1 | 96 img/s | 10.37 ms | 10.81 ms | 11.73 ms |
| 256 | N/A | 214.48 ms | 202.51 ms | 202.88 ms |

## Other

| **GPUs** | **Throughput - TF32** | **Throughput speedup (TF32 to mixed precision)** |
|:-:|:-:|:-:|
| 8 | 7248 img/s | 2.29 x |
"""


def test_the_table_parser_keeps_lines_headings_and_the_statement_in_scope():
    parsed = source_nvidia_tables.figures(README, "resnet50")
    first = {f["metric"]: f for f in parsed.figures if f["line"] == 11}
    assert {m: f["value"] for m, f in first.items()} == {
        "throughput_avg": "96", "latency_avg": "10.37", "latency_p95": "10.81", "latency_p99": "11.73"}
    assert first["latency_avg"]["precision"] == "FP32" and first["latency_avg"]["system_line"] == 5
    assert "pytorch-21.03" in first["latency_avg"]["statement"] and first["latency_avg"]["statement_line"] == 3
    assert parsed.not_available == 1
    train = [f for f in parsed.figures if f["mode"] == "train"]
    assert [(f["line"], f["value"], f["precision"], f["n_gpus"], f["statement"]) for f in train] == \
        [(18, "7248", "TF32", "8", "")]          # the speedup column is derived: not read; the statement ended


def test_extraction_refuses_a_directory_that_is_no_mirror(tmp_path, capsys):
    out = tmp_path / "out"
    assert extract_sources.main(["--timm", str(tmp_path), "--nvidia", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("extract_sources: ")
    assert not out.exists()


def test_unknown_source_is_refused():
    with pytest.raises(ValueError, match="unknown source"):
        published_sources.rows("swin")


@pytest.mark.skipif(not (TIMM_MIRROR.is_dir() and NVIDIA_MIRROR.is_dir()), reason="the two mirrors are not here")
def test_extraction_gives_the_committed_bytes(tmp_path):
    subprocess.run([sys.executable, str(BENCH / "extract_sources.py"), "--timm", str(TIMM_MIRROR),
                    "--nvidia", str(NVIDIA_MIRROR), "--out", str(tmp_path)], check=True, capture_output=True)
    for name in ("timm_gpu.csv.gz", "nvidia_dle.csv.gz", "extraction_notes.txt"):
        assert (tmp_path / name).read_bytes() == (published_sources.DATA / name).read_bytes(), name
