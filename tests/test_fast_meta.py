"""The shape-only meta kernels give exactly torch's meta outputs (shape, dtype, strides)."""
import pytest
import torch

from analysis.count.fast_meta import FAST_BINARY, FAST_KERNELS, _addmm_eligible, _binary_eligible, _eligible, addmm

aten = torch.ops.aten
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _layout(out):
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [None if t is None else (tuple(t.shape), t.dtype, t.stride()) for t in outs]


def _m(*shape, dtype=torch.float32):
    return torch.empty(shape, device="meta", dtype=dtype)


def _cases(dt):
    x, w, x4, c = _m(2, 5, 7, dtype=dt), _m(7, dtype=dt), _m(2, 6, 4, 4, dtype=dt), _m(6, dtype=dt)
    stats = _m(2, 5, 1)
    yield aten.native_layer_norm.default, (x, [7], w, w, 1e-5)
    yield aten.native_layer_norm_backward.default, (x, x, [7], stats, stats, w, w, [True, True, True])
    yield aten.native_group_norm.default, (x4, c, c, 2, 6, 16, 3, 1e-5)
    yield aten.native_group_norm_backward.default, (x4, x4, _m(2, 3, dtype=dt), _m(2, 3, dtype=dt), c, 2, 6, 16, 3,
                                                    [True, True, True])
    for training in (True, False):
        yield aten.native_batch_norm.default, (x4, c, c, c, c, training, 0.1, 1e-5)
        yield aten.native_batch_norm_backward.default, (x4, x4, c, c, c, _m(6), _m(6), training, 1e-5,
                                                        [True, True, True])
    yield aten._softmax.default, (x, -1, False)
    yield aten._safe_softmax.default, (x, -1)
    yield aten._softmax_backward_data.default, (x, x, -1, dt)
    yield aten.gelu.default, (x,)
    yield aten.gelu_backward.default, (x, x)
    yield aten.threshold_backward.default, (x, x, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_softmax_activation_kernels_match_torch(dtype):
    for func, args in _cases(dtype):
        assert _eligible(args)
        assert _layout(FAST_KERNELS[func](*args)) == _layout(func(*args)), func


@pytest.mark.parametrize("func", list(FAST_BINARY))
@pytest.mark.parametrize("other_shape", [(2, 3, 4, 5), (5,), (), (3, 1, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_kernels_match_torch(func, other_shape, dtype):
    a, b = _m(2, 3, 4, 5, dtype=dtype), _m(*other_shape, dtype=torch.float32 if other_shape == () else dtype)
    assert _binary_eligible(a, b)
    assert _layout(FAST_BINARY[func](a, b)) == _layout(func(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_shape", [(3,), (4, 3), (1, 3)])
def test_addmm_kernel_matches_torch(dtype, bias_shape):
    args = (_m(*bias_shape, dtype=dtype), _m(4, 5, dtype=dtype), _m(3, 5, dtype=dtype).t())
    assert _addmm_eligible(*args)
    assert _layout(addmm(*args)) == _layout(aten.addmm.default(*args))


def test_ineligible_inputs_fall_through():
    a = _m(2, 3, 4, 5)
    assert not _binary_eligible(a, _m(2, 3, 4, 5).to(memory_format=torch.channels_last))
    assert not _binary_eligible(_m(5), a)                                        # would broadcast `a`
    assert not _binary_eligible(_m(2, 5, dtype=torch.bfloat16), _m(5))         # promotes to float32
    assert not _eligible((torch.empty(2, 3),))                                   # not meta
