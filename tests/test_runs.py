"""The one measurement path: tasks, the subprocess executor, serving memory, the batch sweep via the CLI
(its main() in this process: the exit status and stderr of a real process are tests/test_compare_cli.py's)."""
import json

import pytest

from cli import call_main
from zoo.runs.executors import run_local, run_subprocesses
from zoo.runs.scheduler import schedule
from zoo.runs.isolated import run_isolated
from zoo.store.schema import SCHEMA_VERSION, validate
from zoo.runs.tasks import Task, count
from analysis.size import Size

MIB = 2**20


def test_a_task_survives_json_as_it_was():
    task = Task.named("throughput", "vit_ti16", Size(800, 1344), 2, "bf16", threads=1)
    assert Task.from_json(json.loads(json.dumps(task.to_json()))) == task


def test_local_and_subprocess_executors_give_the_same_rows():
    tasks = [Task.named("cost", "vit_ti16", Size.of(64)), Task.named("cost", "resnet50", Size.of(64))]
    local, isolated = [], []
    run_local(schedule(tasks), local.append)
    run_subprocesses(schedule(tasks), isolated.append)
    drop = {"software", "env"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in local] == \
        [{k: v for k, v in r.items() if k not in drop} for r in isolated]
    assert all(r["schema"] == SCHEMA_VERSION and not r.get("failed") for r in isolated)


def test_a_process_that_dies_is_a_failed_row_in_the_one_format():
    row = run_isolated(Task.named("cost", "vit_ti16", Size.of(64)), timeout_s=0.01)     # killed before it can answer
    assert row["failed"].startswith("TimeoutError: ") and validate(row) is row
    assert {"schema", "kind", "model", "img_h", "img_w", "batch_size", "settings", "software"} <= set(row)


def test_an_unknown_model_inside_a_task_is_a_failed_row_not_a_crash():
    row = run_isolated(Task.named("cost", "no_such_model", Size.of(64)))
    assert row["failed"].startswith("ChildProcessError: ") and "UnknownModelError" in row["failed"]


def _booked(nbytes: int) -> int:
    """The caching allocator's block for a request under 10 MiB: rounded up to 512 bytes (c10/cuda/
    CUDACachingAllocator.cpp kMinBlockSize); every DeiT-Ti tensor is that small."""
    assert nbytes <= 10 << 20
    return -(-nbytes // 512) * 512


@pytest.mark.parametrize("dtype, itemsize", [("fp32", 4), ("bf16", 2)])
def test_serving_memory_is_weights_plus_activations(dtype, itemsize):
    """serve = weights at the dtype + activation peak. The weights come from timm's own DeiT-Ti (no buffers),
    not from archzoo's count. A training step is held as on a CUDA GPU at any dtype (autocast keeps fp32
    weights): each fp32 weight, its gradient and its SGD momentum one allocator block, the fp32 input batch,
    and the larger of the backward's activation peak and the foreach step's one fp32 temporary per parameter."""
    import timm

    tensors = list(timm.create_model("deit_tiny_patch16_224").parameters())
    params = sum(p.numel() for p in tensors)
    assert params == 5_717_416                                               # DeiT-Ti, 5.7 M (Touvron et al.)
    c = count("deit_ti", Size(224, 224), batch_size=4, dtype=dtype, train=True)
    assert c["params"] == params and c["weight_bytes"] == itemsize * params
    assert c["serve_bytes"] == itemsize * params + c["act_peak_bytes"]
    blocks = sum(_booked(4 * p.numel()) for p in tensors)                   # fp32, one block per tensor
    parts = c["train_gpu_parts"]
    assert parts["weight_bytes"] == parts["grad_bytes"] == blocks
    assert parts["input_bytes"] == _booked(4 * 3 * 224 * 224 * 4)
    held = blocks + parts["input_bytes"] + 2 * blocks                        # weights, input, gradients + momentum
    assert c["train_serve_bytes"] == held + max(parts["act_peak_bytes"], blocks)
    assert c["act_peak_bytes"] > 0 and c["train_act_peak_bytes"] > c["act_peak_bytes"]
    assert "SGD" in c["train_optimizer"] and ("autocast" in c["train_optimizer"]) == (dtype == "bf16")
    assert c["train_precision"] == ("fp32" if dtype == "fp32" else "autocast bf16")


def test_one_request_is_what_is_counted_keyed_and_planned():
    """ViT-B/16 at 224 through the request: the closed form (Dosovitskiy et al. eqs. 1-4: 196 patches + the class
    token, d 768, 12 layers, MLP 3072) is 17,563,828,224 MACs; the count cache's key holds the request's axes
    as before (an optimizer is not part of it), and a Task hands its request down unchanged."""
    from analysis.count.closed_form import ViTShape, vit_macs
    from zoo.runs.count_cache import count_key
    from zoo.runs.counted import counted
    from zoo.runs.request import Request

    request = Request("vit_b16", 224)
    assert count(request)["macs"] == vit_macs(ViTShape(768, 12, 3072, 16), 224)["total"] == 17_563_828_224
    key = count_key(request)
    assert {k: key[k] for k in ("model", "img_h", "img_w", "batch_size", "dtype", "train", "features",
                                "frozen_stages", "detector", "segmenter")} == {
        "model": "vit_b16", "img_h": 224, "img_w": 224, "batch_size": 1, "dtype": "fp32", "train": False,
        "features": False, "frozen_stages": None, "detector": None, "segmenter": None}
    assert set(key) - {"model", "img_h", "img_w", "batch_size", "dtype", "train", "features", "frozen_stages",
                       "detector", "segmenter"} == {"torch", "timm", "archzoo", "source", "spec"}
    adamw = Request("deit_ti", 224, train=True, optimizer="adamw")
    assert count_key(adamw) == count_key(adamw.replace(optimizer=None))
    # AdamW keeps two fp32 states per parameter, SGD with momentum one: 4 bytes more a (trainable) parameter,
    # DeiT-Ti's 5,717,416 (timm's deit_tiny_patch16_224), each state tensor an allocator block of 512-byte units
    more = counted(adamw)["train_serve_bytes"] - counted(adamw.replace(optimizer=None))["train_serve_bytes"]
    assert 4 * 5_717_416 <= more < 4 * 5_717_416 + 512 * 152 and more % 512 == 0       # DeiT-Ti: 152 tensors
    task = Task.of("cost", adamw, padded_from="223")
    assert task.request == adamw and task.request.optimizer == "adamw" and task.padded_from == "223"
    assert Task.named("throughput", "deit_ti", 224, batch_size=8).request.per_image == Request("deit_ti", 224)


def test_serve_bytes_of_fp32_rows_cover_four_bytes_per_parameter(tmp_path):
    result = call_main("zoo.compare", "--models", "vit_ti16,resnet50", "--metrics", "cost,memory", "--format", "json",
                     "--no-save")
    for r in json.loads(result.stdout):
        assert r["serve_bytes"] >= 4 * r["params"] + r["act_peak_bytes"]


def test_batch_sweep_marks_the_serving_batch(tmp_path, kept_peaks):
    """A target no batch of a tiny model misses on any machine would not stop the sweep; one no batch can
    meet marks none; so use the model's own batch-1 latency: the sweep must stop at the first miss."""
    result = call_main("zoo.compare", "--models", "timm:resnet10t", "--resolutions", "32", "--metrics", "throughput",
                     "--batch-sizes", "sweep", "--latency-target-ms", "0.000001", "--quick", "--threads", "1",
                     "--out", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "results" / "throughput.jsonl").read_text().splitlines()]
    assert [r["batch_size"] for r in rows] == [1]                       # batch 1 already misses: stop
    assert rows[0]["sweep_within_target"] is False and rows[0]["serving_batch"] is False
    assert rows[0]["latency_target_ms"] == 1e-6


@pytest.mark.parametrize("args, expected", [
    (["--batch-sizes", "sweep"], "go together"),
    (["--latency-target-ms", "100"], "go together"),
    (["--batch-sizes", "sweep", "--latency-target-ms", "-3", "--metrics", "throughput"], "not a positive number"),
    (["--batch-sizes", "sweep", "--latency-target-ms", "100", "--metrics", "cost"], "needs --metrics throughput"),
    (["--compile", "turbo"], "unknown compile"),
    (["--backend", "tensorrt"], "unknown backend"),
    (["--backend", "onnxruntime", "--dtype", "bf16"], "fp32 inference only"),
    (["--resolutions", "800x1344x3"], "HEIGHTxWIDTH"),
    (["--resolutions", "800xabc"], "not an integer"),
])
def test_deployment_options_are_checked(tmp_path, args, expected):
    result = call_main("zoo.compare", "--models", "vit_ti16", *args, "--out", str(tmp_path))
    assert result.returncode == 2 and expected in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_onnxruntime_rows_through_the_cli(tmp_path, kept_peaks):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    result = call_main("zoo.compare", "--backend", "onnxruntime", "--models", "deit_ti", "--resolutions", "64",
                     "--metrics", "throughput", "--quick", "--threads", "1", "--out", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = [json.loads(line) for line in (tmp_path / "results" / "throughput.jsonl").read_text().splitlines()]
    assert row["backend"] == "onnxruntime" and row["settings"]["backend"] == "onnxruntime"
    assert row["imgs_per_s"] > 0 and row["onnx_matches_eager"] is True and row["onnx_opset"] == 18


def test_throughput_and_train_plan_a_timed_inference_and_a_timed_training_step():
    """--metrics throughput,train (docs/compare.md): the cost row (counted with its training memory), then one
    timed inference task and one timed training task, same model, size and batch."""
    from zoo.runs.plan import plan_tasks
    tasks = plan_tasks(["vit_ti16"], [Size(224, 224)], [1], ["throughput", "train"]).tasks
    assert [(t.kind, t.request.train, t.request.model, t.request.img_size, t.request.batch_size) for t in tasks] == [
        ("cost", True, "vit_ti16", Size(224, 224), 1), ("throughput", False, "vit_ti16", Size(224, 224), 1),
        ("throughput", True, "vit_ti16", Size(224, 224), 1)]


def test_cost_and_a_timed_row_build_the_model_twice_in_every_process(tmp_path, kept_peaks, monkeypatch):
    """zoo.compare --metrics cost,throughput --quick on an empty count cache: the cost count builds on meta once
    (its record and op list kept in the user cache), the host-memory fit and the roofline read that count, and the
    timing builds on the CPU once; $ARCHZOO_BUILD_LOG has one line per build of every process."""
    from cli import run_cli

    from zoo.runs.counted import BUILD_LOG_ENV

    log = tmp_path / "builds.log"
    monkeypatch.setenv(BUILD_LOG_ENV, str(log))
    done = run_cli("zoo.compare", "--models", "deit_ti", "--metrics", "cost,throughput", "--quick",
                   "--resolutions", "64", "--out", str(tmp_path / "out"), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)[0].get("roofline_ms")                 # the roofline was estimated
    builds = [line.split()[1:] for line in log.read_text().splitlines()]
    assert sorted(builds) == [["cpu", "deit_ti", "64", "b1"], ["meta", "deit_ti", "64", "b1"]]


def test_a_task_holds_its_request_and_timing_and_restates_neither():
    import dataclasses

    from zoo.runs.request import Request
    from zoo.runs.tasks import Timing

    own = {f.name for f in dataclasses.fields(Task)}
    assert own.isdisjoint(f.name for f in dataclasses.fields(Request))
    assert own.isdisjoint(f.name for f in dataclasses.fields(Timing))
    task = Task.named("throughput", "deit_ti", 224, 8, device="cpu", quick=True, padded_from="223")
    assert task.request == Request("deit_ti", Size(224, 224), 8) and task.timing == Timing(device="cpu", quick=True)
    assert Task.named("throughput", "deit_ti", 224).timing == Timing() and Task.named("cost", "deit_ti", 224).timing is None
    with pytest.raises(ValueError, match="never timed"):
        Task("cost", Request("deit_ti", 224), Timing())
    with pytest.raises(TypeError, match="no field"):
        Task.named("cost", "deit_ti", 224, devise="cpu")
    assert Task.from_json(json.loads(json.dumps(task.to_json()))) == task      # what a subprocess worker is sent


def test_every_committed_rows_settings_are_what_its_task_gives():
    """The settings (and so the --resume key) come from the fields' metadata: each kind of row committed by
    earlier code, rebuilt as a Task from its own fields, gives exactly the settings it holds."""
    from committed import committed_text

    seen = {}
    for name in ("cost", "throughput"):
        for line in committed_text(f"results/{name}.jsonl").splitlines():
            row = json.loads(line)
            seen.setdefault((row["kind"], tuple(sorted(row["settings"].items()))), row)
    assert len({kind for kind, _ in seen}) == 2 and len(seen) >= 4
    for row in seen.values():
        fields = dict(row["settings"])
        if "slide" in fields:
            fields["slide"] = tuple(int(side) for side in fields["slide"].split(","))
        task = Task.named(row["kind"], row["model"], Size(row["img_h"], row["img_w"]), row["batch_size"], **fields)
        assert task.settings == row["settings"], row["settings"]
