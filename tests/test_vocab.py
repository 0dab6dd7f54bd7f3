"""The shared words (analysis.vocab): DTYPES built on first use, and one-line errors for what it cannot take.
Expected values are torch's own dtypes and devices."""
import pytest
import torch

from analysis import vocab


def test_dtypes_are_torchs_built_once_on_first_use(monkeypatch):
    monkeypatch.delitem(vars(vocab), "DTYPES", raising=False)         # as in a fresh process
    assert vocab.DTYPES == {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    assert vocab.DTYPES is vocab.DTYPES
    assert vocab.torch_dtype("bf16") is torch.bfloat16 and vocab.dtype_name(torch.float16) == "fp16"


def test_what_it_cannot_take_is_a_value_error_naming_it_and_the_choices():
    with pytest.raises(ValueError, match=r"torch.int8; expected one of fp32, bf16, fp16"):
        vocab.dtype_name(torch.int8)
    with pytest.raises(ValueError, match=r"unsupported device 'tpu'"):          # torch.device('tpu') raises
        vocab.resolve_device("tpu")
