"""`zoo.select` on every axis `zoo.compare` measures: feature extractors, training memory, backends, noisy
timings (undecided, not excluded), rank fallback, padding; and its Query instead of many parameters."""
import json
import re

import pytest

from cli import call_main
from test_select import DEIT_TI_PARAMS, MIB, run_select, vit_macs
from zoo.select.cli import main, select


def test_no_function_of_select_takes_more_than_ten_parameters():
    import inspect

    import zoo.select.answers
    import zoo.select
    import zoo.answers.text
    import zoo.select.shortlist
    import zoo.select.cost
    import zoo.select.timing

    for module in (zoo.select, zoo.select.shortlist, zoo.select.cost, zoo.select.timing, zoo.answers.text,
                   zoo.select.answers):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__:
                assert len(inspect.signature(fn).parameters) <= 10, f"{module.__name__}.{name}"


def test_every_option_of_the_command_is_a_query_option():
    """The command line's options land where they belong: what is built in the Request template, how it is timed
    in the Timing, the bounds in the Constraints; and no option of the command is missing from OPTIONS."""
    from zoo.options.predicted import PREDICT_ONLY
    from zoo.options.select import OPTIONS
    from zoo.select.cli import build_parser, query_of
    from zoo.select.shortlist import Query

    args = build_parser().parse_args(["--features", "--train", "--optimizer", "adamw", "--backend", "eager",
                                      "--channels-last", "--compile", "--allow-noisy", "--wait-quiet", "5",
                                      "--max-gmacs", "7", "--batch-size", "3", "--models", "convnext_t"])
    q = query_of(args)
    assert isinstance(q, Query) and q.request.features and q.request.train and q.request.optimizer == "adamw"
    assert q.request.batch_size == 3 and q.timing.channels_last and q.timing.compile == "default"
    assert q.constraints.max_gmacs == 7.0 and q.allow_noisy and q.wait_quiet == 5.0 and q.save
    dests = {a.dest for a in build_parser()._actions} - {"help", "format", "no_save", "answers", "no_cache",
                                                         "save_plan", "from_plan"}    # how to run, not what to ask
    assert dests - set(PREDICT_ONLY) <= set(OPTIONS)          # --predict's own: zoo.select.predicted


def test_the_command_line_and_the_api_ask_the_same_by_default():
    """`zoo.select` with no options and `Query.of()` (select()'s defaults) are one question: the command line's
    defaults are text of its own (argparse), the API's come from the fields that hold them."""
    from zoo.select.cli import build_parser, query_of
    from zoo.select.shortlist import Query

    import inspect

    from zoo.options.select import DEFAULTS
    from zoo.select.shortlist import select

    assert query_of(build_parser().parse_args([])) == Query.of()
    assert Query.of().flat() == query_of(build_parser().parse_args([])).flat()
    for api in (Query.of, select):      # what their signatures show is what a plan file's missing option takes
        shown = {k: p.default for k, p in inspect.signature(api).parameters.items() if k in DEFAULTS}
        assert shown == {k: DEFAULTS[k] for k in shown} and shown


def test_a_query_restates_no_field_of_what_it_holds():
    """Query composes a Request template, a Timing and Constraints: none of their fields is one of its own."""
    import dataclasses

    from zoo.runs.request import Request
    from zoo.runs.tasks import Timing
    from zoo.select.shortlist import Constraints, Query

    own = {f.name for f in dataclasses.fields(Query)}
    for held in (Request, Timing, Constraints):
        assert own & {f.name for f in dataclasses.fields(held)} == set(), held.__name__


def flop_counter_macs(timm_name: str, hw: tuple[int, int]) -> int:
    """torch's own FLOP counter on timm's features_only model (meta device), in MACs."""
    import timm
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = timm.create_model(timm_name, features_only=True, pretrained=False)
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, *hw, device="meta"))
    return counter.get_total_flops() // 2


def test_detection_backbones_ranked_by_gmacs_and_excluded_by_training_memory():
    """The issue's done-when: feature extractors at 800x1344, training memory at batch 2, ranked by GMACs."""
    out = select(["swin_t", "convnext_t", "resnet50", "vit_b16", "deit_s"], "800x1344", features=True, train=True,
                 batch_size=2, max_train_mib=5120, rank="gmacs")
    rows = {r["model"]: r for r in out["shortlist"]}
    # no pooling and no head: the backbone MACs torch's FLOP counter finds on timm's features_only models
    for model, timm_name in (("resnet50", "resnet50"), ("convnext_t", "convnext_tiny")):
        assert rows[model]["gmacs"] * 1e9 == pytest.approx(flop_counter_macs(timm_name, (800, 1344)), rel=1e-9)
    # the maps a neck receives: strides 4, 8, 16, 32 of 800x1344 (ConvNeXt-T widths 96..768, paper Table 9)
    assert rows["convnext_t"]["features"] == [[96, 200, 336], [192, 100, 168], [384, 50, 84], [768, 25, 42]]
    gmacs = [r["gmacs"] for r in out["shortlist"]]
    assert gmacs == sorted(gmacs) and out["query"]["rank"] == "gmacs"
    (vit,) = out["excluded"]
    found = re.fullmatch(r"training memory ([\d,]+) MiB > 5120 MiB at batch 2 \(SGD with momentum: .*", vit["reason"])
    assert vit["model"] == "vit_b16" and found and float(found.group(1).replace(",", "")) > 5120
    assert all(r["train_mib"] <= 5120 for r in out["shortlist"])


def test_training_memory_is_fp32_weights_gradients_and_optimizer_state():
    # DeiT-Ti (timm's deit_tiny_patch16_224: DEIT_TI_PARAMS parameters in 152 tensors, no buffers) trains, in
    # fp32 or under bf16 autocast alike, with fp32 weights, gradients and SGD's momentum (1 + 1 + 1 tensors a
    # parameter) or AdamW's two moments (1 + 1 + 2), each tensor a CUDA caching-allocator block rounded up to
    # 512 bytes, beside the fp32 input; the step peaks in the backward (activations) or in the foreach optimizer
    # step (one fp32 temporary per parameter), whichever holds more
    import timm

    tensors = list(timm.create_model("deit_tiny_patch16_224").parameters())
    assert sum(p.numel() for p in tensors) == DEIT_TI_PARAMS
    blocks = sum(-(-4 * p.numel() // 512) * 512 for p in tensors)
    image = 3 * 224 * 224 * 4                                       # 602,112 bytes: 1,176 blocks exactly
    for dtype, optimizer, tensors_per_param in (("fp32", "sgd", 3), ("fp32", "adamw", 4), ("bf16", "adamw", 4)):
        row = select(["deit_ti"], 224, train=True, dtype=dtype, optimizer=optimizer)["shortlist"][0]
        expected = tensors_per_param * blocks + image + max(row["train_act_mib"] * MIB, blocks)
        assert row["train_mib"] * MIB == pytest.approx(expected, abs=1)
        assert ("AdamW" if optimizer == "adamw" else "SGD") in row["train_optimizer"]


def test_a_rank_no_candidate_has_falls_back_to_gmacs_and_says_so():
    out = select(["convnext_t", "resnet50"], "800x1344")          # no top-1 is published at a detection size
    assert out["query"]["rank"] == "gmacs" and out["query"]["rank_asked"] == "top1"
    assert "no candidate has top1 at 800x1344 px" in out["query"]["rank_note"]
    assert [r["model"] for r in out["shortlist"]] == ["resnet50", "convnext_t"]    # 4.09 x 6 < 4.46 x 6 GMACs
    from zoo.select.cli import render

    assert "NB: no candidate has top1" in render(out, "markdown")


def fake_timing(monkeypatch, latency_ms: dict, noisy: set) -> dict:
    """Stand in for the timing (zoo.runs.timed.measure_timed, which run_task calls) and the peak probe: rows with
    the given p50 latencies, noisy (cv 0.6, others 40%) for `noisy`, on this machine (so a stored one is found
    under its --resume key). Returns model -> the MACs the scheduler handed the timing."""
    import zoo.runs.peaks
    import zoo.runs.timed
    import zoo.select.timing
    from zoo.runs.tasks import machine

    handed = {}

    def measure(task, macs, peak):
        handed[task.request.model] = macs
        cv, share = (0.6, 0.4) if task.request.model in noisy else (0.01, 0.0)
        p50 = latency_ms[task.request.model]
        return {"mode": "inference", "latency_ms_p50": p50, "latency_ms_p99": p50, "imgs_per_s": 1e3 / p50,
                "ran_batch_size": 1, "cv": cv, "foreign_cpu_share": share, "noisy": task.request.model in noisy, "iters": 10,
                "backend": task.timing.backend, "env": machine(task.timing.device)}

    monkeypatch.setattr(zoo.runs.timed, "measure_timed", measure)
    monkeypatch.setattr(zoo.runs.peaks.PeakCache, "get", lambda self, task: {})
    monkeypatch.setattr(zoo.select.timing, "load_average", lambda: None)     # the rows alone say the load
    monkeypatch.setattr(zoo.select.timing, "_committed", lambda task: {})     # no bound: these rows decide
    return handed


def test_noisy_timings_leave_a_model_undecided_unless_allow_noisy(tmp_path, monkeypatch):
    handed = fake_timing(monkeypatch, {"deit_ti": 500.0, "deit_s": 500.0}, {"deit_ti"})
    out = select(["deit_ti", "deit_s"], 224, max_latency_ms=100, device="cpu", save=False, out=str(tmp_path))
    assert out["shortlist"] == [] and [e["model"] for e in out["excluded"]] == ["deit_s"]     # steady: decided
    (undecided,) = out["undecided"]
    # no steps in these rows: the band is p50 x (1 -/+ 2 cv), 0-1,100 ms for deit_ti (cv 0.6): it straddles 100 ms;
    # deit_s's (cv 0.01) is 490-510 ms, over the budget beyond the noise
    assert undecided["model"] == "deit_ti" and undecided["reason"].startswith(
        "undecided: timed under load (others' CPU 40% of our cores, cv 0.60): a loaded timing cannot exclude")
    assert "latency p50 500 ms vs 100 ms (eager; n=10, band 0-1,100 ms" in undecided["reason"]
    assert out["timing"]["partial"]["reason"].startswith("timed under load: deit_ti undecided")
    # the timing is handed the counted MACs (closed form, ViT paper's shapes: 197 tokens of width 192, 12 blocks)
    assert handed["deit_ti"] == pytest.approx(vit_macs(197, 192, 12, 196, 16), rel=0.01)
    from zoo.select.cli import render

    assert "undecided (1):\n- deit_ti: undecided: timed under load" in render(out, "markdown")
    decided = select(["deit_ti", "deit_s"], 224, max_latency_ms=100, device="cpu", save=False, out=str(tmp_path),
                     allow_noisy=True)
    assert decided["undecided"] == [] and sorted(e["model"] for e in decided["excluded"]) == ["deit_s", "deit_ti"]
    noisy = next(e for e in decided["excluded"] if e["model"] == "deit_ti")
    assert noisy["reason"].startswith("latency p50 500 ms > 100 ms (eager; n=10")
    assert noisy["reason"].endswith(") (noisy timing, --allow-noisy)")
    # ranking on noisy evidence alone: the noisy model is not ranked either
    ranked = select(["deit_ti", "deit_s"], 224, rank="latency", device="cpu", save=False, out=str(tmp_path))
    assert [r["model"] for r in ranked["shortlist"]] == ["deit_s"] and ranked["undecided"][0]["model"] == "deit_ti"


def test_a_stored_noisy_row_is_timed_again(tmp_path, monkeypatch):
    from zoo.store.store import ResultStore

    fake_timing(monkeypatch, {"deit_ti": 50.0}, {"deit_ti"})
    first = select(["deit_ti"], 224, max_latency_ms=100, device="cpu", out=str(tmp_path))
    assert first["undecided"] and len(ResultStore(tmp_path).rows("throughput")) == 1
    fake_timing(monkeypatch, {"deit_ti": 50.0}, set())
    second = select(["deit_ti"], 224, max_latency_ms=100, device="cpu", out=str(tmp_path))
    assert [(r["model"], r["timing"]) for r in second["shortlist"]] == [("deit_ti", "measured")]
    assert len(ResultStore(tmp_path).rows("throughput")) == 2
    handed = fake_timing(monkeypatch, {"deit_ti": 50.0}, {"deit_ti"})     # a steady stored row answers now
    third = select(["deit_ti"], 224, max_latency_ms=100, device="cpu", out=str(tmp_path))
    assert [(r["model"], r["timing"]) for r in third["shortlist"]] == [("deit_ti", "reused")] and handed == {}
    assert len(ResultStore(tmp_path).rows("throughput")) == 2


@pytest.mark.parametrize("args, message", [
    (["--backend", "tensorrt"], "--backend: unknown backend 'tensorrt'"),
    (["--backend", "onnxruntime", "--train"], "--backend onnxruntime: the backend times fp32 inference only"),
    (["--optimizer", "adam"], "--optimizer: unknown optimizer 'adam'"),
    (["--wait-quiet", "-1"], "--wait-quiet: '-1' must be a finite number >= 0"),
    (["--compile", "fast"], "--compile: unknown compile 'fast'"),
])
def test_bad_timing_options(args, message, tmp_path, capsys):
    assert main(["--max-latency-ms", "100", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zoo.select: error: {message}") and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_onnxruntime_is_timed_and_decides(tmp_path, kept_peaks):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    # in this process, and timm's small test ViT: exporting a 12-block ViT to ONNX costs seconds
    result = call_main("zoo.select", "--backend", "onnxruntime", "--models", "timm:test_vit", "--max-latency-ms", "1e6",
                        "--latency-stat", "p99", "--device", "cpu", "--quick", "--threads", "1", "--allow-noisy",
                        "--format", "json", "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["shortlist"]
    assert row["backend"] == "onnxruntime" and row["latency_ms_p99"] > 0
    (stored,) = [json.loads(line) for line in (tmp_path / "results" / "throughput.jsonl").read_text().splitlines()]
    assert stored["backend"] == "onnxruntime" and stored["settings"]["backend"] == "onnxruntime"


def test_the_noise_rule_counts_only_the_cores_we_timed_on():
    from zoo.runs.timed import is_noisy

    # 2 cores, 1 thread: others using the other core (half the machine) is not noise; taking 30% of ours is
    assert not is_noisy(0.01, 0.5, threads=1, cores=2)
    assert is_noisy(0.01, 0.65, threads=1, cores=2)
    # every core ours: 16% of the machine to others is noise, 14% is not; a spread of 0.3 always is
    assert is_noisy(0.01, 0.16, threads=2, cores=2) and not is_noisy(0.01, 0.14, threads=2, cores=2)
    assert is_noisy(0.3, 0.0, threads=1, cores=2) and is_noisy(0.01, 0.16, threads=None, cores=2)


def test_pad_to_pads_each_side_and_the_answer_says_so():
    # 800x1333 (the usual detection scale) padded to multiples of 32 is 800x1344; Swin takes that, not 800x1333
    out = select(["swin_t"], "800x1333", pad_to=32, features=True)
    assert out["query"]["resolution"] == (800, 1344) and out["query"]["padded_from"] == "800x1333"
    assert [r["model"] for r in out["shortlist"]] == ["swin_t"]
    from zoo.select.cli import render

    assert render(out, "markdown").startswith("shortlist feature extractors at 800x1344 px (padded from 800x1333)")
    refused = select(["swin_t"], "800x1333", features=True)["excluded"][0]["reason"]
    assert refused.endswith("nearest: 800x1312, 800x1344")       # 41 and 42 x 32
