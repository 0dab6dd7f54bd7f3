"""Inputs at archzoo's documented bounds (issue 34, findings 3 and 10): every size, batch and --pad-to within
them yields a row or a one-line refusal, never a traceback; durations are bounded like --iters."""
import json

import pytest
from cli import call_main, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.options.values import MAX_BATCH, MAX_SECONDS, MAX_SIDE
from zoo.store.schema import MAX_COUNT, validate
from zoo.runs.tasks import Task, run_task

# vit_b16's self-attention at 65,536 px: (65536/16)^2 = 2^24 tokens, so QK^T and AV alone take
# 2 x 12 layers x (2^24)^2 x 768 = 5.2e18 MACs per image (the closed form): within int64 at batch 1 but a
# training step (3x) past it, so the corners below hold both a counted row and a refused one.
VIT_B16_ATTN_MACS_65536 = 2 * 12 * (2**24) ** 2 * 768


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["vit_b16", "resnet50"]), side=st.sampled_from([224, MAX_SIDE]),
       batch=st.sampled_from([1, MAX_BATCH]), train=st.booleans())
def test_every_corner_of_the_input_bounds_is_a_valid_row(model, side, batch, train):
    row = validate(run_task(Task.named("cost", model, side, batch_size=batch, train=train)))
    assert row["failed"] is None if "failed" in row else True
    if row.get("skipped"):
        assert "int64" in row["skipped"] and "\n" not in row["skipped"]
    else:
        numbers = [v for v in row.values() if isinstance(v, int) and not isinstance(v, bool)]
        assert max(numbers) <= MAX_COUNT and row["macs"] > 0


def test_the_corner_past_int64_is_refused_with_its_field_and_the_one_within_is_counted():
    assert VIT_B16_ATTN_MACS_65536 < MAX_COUNT < 3 * VIT_B16_ATTN_MACS_65536
    inference = run_task(Task.named("cost", "vit_b16", MAX_SIDE))
    assert inference["macs"] >= VIT_B16_ATTN_MACS_65536 and inference.get("skipped") is None
    train = run_task(Task.named("cost", "vit_b16", MAX_SIDE, batch_size=MAX_BATCH, train=True))
    assert train["skipped"].startswith("train_macs") and train.get("macs") is None


def test_compare_at_the_bounds_writes_a_row_for_every_model(tmp_path):
    """The regression: a SchemaError raised in a pool worker left the other models without rows."""
    done = run_cli("zoo.compare", "--models", "vit_b16,resnet50", "--resolutions", str(MAX_SIDE), "--batch-sizes",
                   str(MAX_BATCH), "--metrics", "cost,memory,train", "--format", "json", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "SchemaError" not in done.stderr
    rows = [json.loads(line) for path in (tmp_path / "results").glob("*.jsonl") for line in path.open()]
    assert sorted(r["model"] for r in rows) == ["resnet50", "vit_b16"]
    assert all(validate(r) for r in rows)


@pytest.mark.parametrize("module, args", [
    ("zoo.compare", ["--models", "deit_ti", "--resolutions", str(MAX_SIDE), "--pad-to", str(MAX_SIDE - 1),
                     "--metrics", "cost"]),
    ("zoo.select", ["--resolution", str(MAX_SIDE), "--pad-to", str(MAX_SIDE - 1)]),
    ("zoo.compare", ["--models", "deit_ti", "--min-seconds", "1e9", "--metrics", "throughput"]),
    ("zoo.select", ["--wait-quiet", "1e300"]),
    ("zoo.select", ["--min-seconds", "1e9"]),
])
def test_pad_to_and_durations_past_their_bounds_are_one_line_refusals(tmp_path, module, args):
    done = call_main(module, *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    option = next(a for a in args if a in ("--pad-to", "--min-seconds", "--wait-quiet"))
    assert option in done.stderr and not (tmp_path / "out").exists()


def test_durations_at_their_bound_are_accepted():
    from zoo.options.values import number

    assert number(str(MAX_SECONDS), "min-seconds") == MAX_SECONDS


def test_select_at_the_bounds_excludes_a_count_past_int64_with_its_reason():
    done = call_main("zoo.select", "--models", "vit_b16", "--resolution", str(MAX_SIDE), "--batch-size",
                     str(MAX_BATCH), "--train", "--format", "json")
    assert done.returncode == 0, done.stderr
    (excluded,) = json.loads(done.stdout)["excluded"]
    assert excluded["reason"].startswith("not counted: ") and "int64 bound" in excluded["reason"]


def test_a_forward_past_int64_elements_is_the_documented_skipped_row():
    """Issue 42, defect 9: ViTDet's global attention bias at 65,536 px and batch 2^20 has B x heads x (hw)^2 =
    2^20 x 12 x (4096^2)^2 = 3.5e21 elements, past int64 (9.2e18): torch refuses the tensor on meta, and the row
    was a failure ("numel: integer multiplication overflow") where the docs promise a skipped row."""
    assert MAX_BATCH * 12 * (MAX_SIDE // 16) ** 4 > MAX_COUNT
    row = validate(run_task(Task.named("cost", "vitdet_b16", MAX_SIDE, batch_size=MAX_BATCH,
                                          detector="vitdet_maskrcnn")))
    assert row["failed"] is None if "failed" in row else True
    assert "int64" in row["skipped"] and "numel" in row["skipped"] and "\n" not in row["skipped"]


# --predict at the bounds (issue 54): vit_ti16's training step at 65,536 px and batch 2^20 holds a
# (3 x 2^20, 2^24 + 1, 2^24 + 1) score tensor (batch x 3 heads, N = (65536/16)^2 tokens + the class token):
# 2^20 x 3 x (2^24 + 1)^2 > 2^63 elements, so torch cannot size it; resnet50 there has no such tensor.
@pytest.mark.parametrize("module, args", [
    ("zoo.compare", ["--predict", "TPU v3", "--metrics", "train", "--resolutions", str(MAX_SIDE),
                     "--batch-sizes", str(MAX_BATCH)]),
    ("zoo.select", ["--predict", "TPU v3", "--metrics", "train", "--resolution", str(MAX_SIDE),
                    "--batch-size", str(MAX_BATCH)]),
])
def test_predict_past_int64_skips_that_model_naming_why_and_answers_the_others(module, args):
    assert 3 * MAX_BATCH * ((MAX_SIDE // 16) ** 2 + 1) ** 2 > 2**63
    done = call_main(module, *args, "--models", "vit_ti16,resnet50")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    skipped = [line for line in done.stdout.splitlines() if "too large to count" in line]
    assert len(skipped) == 1 and "vit_ti16" in skipped[0] and "int64" in skipped[0]
    assert "| resnet50 |" in done.stdout


def test_a_request_too_large_to_count_is_named_and_another_error_is_not_hidden():
    from zoo.predict.rows import TooLarge, countable
    from zoo.runs.request import Request

    request = Request("vitdet_b16", MAX_SIDE, MAX_BATCH, "bf16")
    with pytest.raises(TooLarge, match=r"vitdet_b16 at 65536x65536 px, batch 1048576: too large to count"):
        with countable(request):
            raise RuntimeError("numel: integer multiplication overflow")
    with pytest.raises(RuntimeError, match="shape mismatch"), countable(request):
        raise RuntimeError("shape mismatch")


def test_select_predict_that_cannot_save_prints_its_answer_and_exits_1(tmp_path, monkeypatch):
    from zoo.store.store import ResultStore, StoreWriteError

    def full_disk(self, row):
        raise StoreWriteError(f"cannot write to {self.dir}/predicted.jsonl: No space left on device")

    monkeypatch.setattr(ResultStore, "append_predicted", full_disk)
    done = call_main("zoo.select", "--predict", "H100", "--models", "vit_ti16,resnet50", "--out", str(tmp_path))
    assert done.returncode == 1
    assert "| vit_ti16 |" in done.stdout and "| resnet50 |" in done.stdout       # the whole answer
    assert done.stderr.count("No space left on device") == 1                    # said once, not per row
