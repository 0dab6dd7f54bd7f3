"""ONNX Runtime timing with tiny models: record fields, the eager-parity check, one-line failures. No timing thresholds."""

import pytest
import torch
import torch.nn as nn

ONNX_EXTRA = 'needs the onnx extra: pip install ".[onnx]"'
pytest.importorskip("onnx", reason=ONNX_EXTRA)
ort = pytest.importorskip("onnxruntime", reason=ONNX_EXTRA)
pytest.importorskip("onnxscript", reason=ONNX_EXTRA)  # the dynamo exporter translates through it

import zoo  # noqa: E402
from analysis.size import Size  # noqa: E402
from analysis.timing.backends import EagerBackend, TimingSetting  # noqa: E402
from analysis.timing.harness import time_model  # noqa: E402
from analysis.timing.latency import TimingProtocol  # noqa: E402
from analysis.timing.onnx_runtime import OnnxExportError, OnnxRuntimeBackend, OrtSessionError, error_line  # noqa: E402

PROTOCOL = TimingProtocol(warmup=1, min_iters=3, min_seconds=0.0)


def measure(model, img_size, backend=None, batch_size=1, threads=1, **setting) -> dict:
    """One harness call, any backend (ONNX Runtime unless told), as a row's fields."""
    result = time_model(model, backend or OnnxRuntimeBackend(), Size.of(img_size), batch_size,
                        TimingSetting(threads=threads, **setting), PROTOCOL)
    return result.as_fields()


def tiny_cnn(classes: int = 10) -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, classes))


class DataDependentBranch(nn.Module):
    """Python control flow on a tensor's value: torch.export cannot trace it."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def check_record(record, batch_size, protocol=PROTOCOL):
    assert record["backend"] == "onnxruntime"
    assert record["imgs_per_s"] > 0 and record["latency_ms_p99"] > 0
    assert record["iters"] == protocol.min_iters == len(record["latencies_ms"])
    assert record["requested_batch_size"] == record["ran_batch_size"] == batch_size
    assert record["error"] is None and record["oom_batch_sizes"] == []
    assert record["onnx_matches_eager"] is True
    assert 0 <= record["onnx_max_abs_diff"] < 1e-4
    assert record["onnx_opset"] == 18
    assert record["onnx_providers"] == ["CPUExecutionProvider"] and record["device"] == "cpu"
    assert record["export_seconds"] > 0 and record["onnxruntime_version"] == ort.__version__
    assert record["dtype"] == "fp32" and record["threads"] == 1


def test_one_harness_times_both_backends_with_one_layout():
    onnx_record = measure(tiny_cnn(), (16, 24), batch_size=2)
    check_record(onnx_record, batch_size=2)
    eager_record = measure(tiny_cnn(), (16, 24), EagerBackend(), batch_size=2)
    assert eager_record["backend"] == "eager"
    onnx_only = {"onnx_exporter", "onnx_opset", "onnx_providers", "export_seconds", "onnxruntime_version",
                 "onnx_max_abs_diff", "onnx_matches_eager"}
    assert set(onnx_record) == set(eager_record) | onnx_only   # the harness's fields, plus the backend's own


def test_timm_resnet():
    check_record(measure(zoo.create_model("timm:resnet10t", img_size=64), 64), batch_size=1)


def test_deit_ti_small():
    check_record(measure(zoo.create_model("deit_ti", img_size=64), 64), batch_size=1)


def test_unexportable_module_raises_one_line():
    with pytest.raises(OnnxExportError) as info:
        measure(DataDependentBranch(), 8)
    message = str(info.value)
    assert "\n" not in message and "\x1b" not in message and len(message) < 300
    assert "dynamo exporter, opset 18" in message and "DataDependent" in message


def test_session_failure_raises_one_line(monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : bad node\n  frame 1\n  frame 2")
    monkeypatch.setattr(ort, "InferenceSession", refuse)
    with pytest.raises(OrtSessionError, match=r"^onnxruntime could not load the model: RuntimeError: .*bad node$"):
        measure(tiny_cnn(), 8)


def test_out_of_memory_while_running_halves_as_eager_does(monkeypatch):
    class Session:
        def __init__(self, *args, **kwargs):
            pass

        def get_providers(self):
            return ["CPUExecutionProvider"]

        def get_inputs(self):
            return [type("Input", (), {"name": "images"})()]

        def run(self, *args):
            raise RuntimeError("Failed to allocate memory for requested buffer of size 123\nstack")
    monkeypatch.setattr(ort, "InferenceSession", Session)
    record = measure(tiny_cnn(), 8, batch_size=4)
    assert record["imgs_per_s"] is None and record["ran_batch_size"] is None and record["oom_batch_sizes"] == [4, 2, 1]
    assert record["error"].split("; ")[0] == \
        "OutOfMemoryError at batch_size=4: Failed to allocate memory for requested buffer of size 123"


@pytest.mark.parametrize("setting", [dict(dtype="bf16"), dict(mode="train"), dict(channels_last=True),
                                     dict(compile="default")])
def test_the_backend_says_which_settings_it_cannot_time(setting):
    why = OnnxRuntimeBackend().unsupported(TimingSetting(**setting))
    assert why == "times fp32 inference only (no train metric, --dtype, --channels-last or --compile)"
    with pytest.raises(ValueError, match="fp32 inference only"):
        measure(tiny_cnn(), 8, **setting)
    assert EagerBackend().unsupported(TimingSetting(**setting)) is None


def test_refuses_missing_providers():
    with pytest.raises(ValueError, match="NoSuchExecutionProvider"):
        measure(tiny_cnn(), 8, OnnxRuntimeBackend(providers=["NoSuchExecutionProvider"]))
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        assert "CUDAExecutionProvider" in OnnxRuntimeBackend().unsupported(TimingSetting(device="cuda"))


def test_error_line_reads_the_root_cause():
    try:
        try:
            raise ValueError("the real reason\nmore detail")
        except ValueError as inner:
            raise RuntimeError("\x1b[96mgeneric wrapper\x1b[0m\nnext steps") from inner
    except RuntimeError as outer:
        assert error_line(outer) == "RuntimeError <- ValueError: the real reason"
