"""Two peers' own counter tests, carried over: each case's expected value as the peer's suite states it, derived
again here by its closed form (m x k x n per matmul, output pixels x C_in/groups x C_out x kernel per conv), and
our count of the same computation compared with both.

torch: pytorch/pytorch@067f1d9d1fec00506e2b6f2bcdb95005e8cbd2ba test/test_flop_counter.py (FLOPs: 2 per MAC);
test_inference_mode from the copy at ROCm/pytorch@407564617cf1e846e62c82bfe58168726cb8e3d4 (the same file, later).
fvcore: facebookresearch/fvcore@3378afe0d71dc2aa95e358bc78dc9b67cb48825a tests/test_flop_count.py and
tests/test_jit_model_analysis.py (fvcore's "flop" is one multiply-add: a MAC). The modules here are written anew to
the shapes those tests use. Where a peer counts outside our convention (fvcore's norms and pooling, torch's
recomputed QK^T in a flash backward) the test says what we count instead. Not carried: torch's GPU-only kernels
run (their formulas are checked on the same shapes through our rules), and its fake-offset varlen case (torch
bounds it by max_seqlen; we refuse offsets we cannot read rather than guess).
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchvision import models as tvm

from zoo_cost import Call, counted_call, macs_under

from analysis.count.cost import macs_by_module, run_forward
from analysis.count.op_rules import MAC_RULES

aten = torch.ops.aten
T = torch.randn


def macs(fn, *inputs, backward=False, grad_mode=torch.enable_grad) -> int:
    with grad_mode():
        counter = counted_call(fn if isinstance(fn, nn.Module) else Call(fn), *inputs, backward=backward)
    assert not counter.uncounted_ops
    return counter.forward_macs + counter.backward_macs


# ---- torch's test_flop_counter.py ------------------------------------------------------------------------------

def test_torch_variety():
    """test_flop_counter_variety: 3012 FLOPs: mm, addmm, matmul, einsum and a Linear(9, 10) on 8 rows."""
    linear = nn.Linear(9, 10)
    closed = 4 * 5 * 6 + 4 * 5 * 6 + 5 * 6 * 7 + 6 * 7 * 8 + 8 * 9 * 10
    ours = macs(lambda: [torch.mm(T(4, 5), T(5, 6)), torch.addmm(T(4, 6), T(4, 5), T(5, 6), beta=0.5, alpha=0.5),
                         torch.matmul(T(5, 6), T(6, 7)), torch.einsum("ab,bc->ac", T(6, 7), T(7, 8)),
                         linear(T(8, 9))][0])
    assert 2 * ours == 2 * closed == 3012


@pytest.mark.parametrize("flops, call, closed", [
    (240, lambda: torch.mm(T(4, 5), T(5, 6)), 4 * 6 * 5),
    (720, lambda: torch.bmm(T(3, 4, 5), T(3, 5, 6)), 3 * 4 * 6 * 5),
    (720, lambda: [torch.addmm(T(4, 6), T(4, 5), T(5, 6)), torch.addmm(T(4, 1), T(4, 5), T(5, 6)),
                   torch.addmm(T(6), T(4, 5), T(5, 6))][0], 3 * 4 * 6 * 5),
    (720, lambda: torch.baddbmm(T(3, 4, 6), T(3, 4, 5), T(3, 5, 6)), 3 * 4 * 6 * 5),
    (28800, lambda: torch.conv2d(T(2, 3, 6, 6), T(6, 3, 4, 4), padding=1), 2 * 5 * 5 * 4 * 4 * 6 * 3),
    (1440, lambda: torch.conv1d(T(2, 3, 6), T(6, 3, 4), padding=1), 2 * 5 * 4 * 6 * 3),
    (2000, lambda: torch.mm(T(10, 10), T(10, 10), out=torch.zeros(10, 10)), 10 * 10 * 10),    # test_addmm_out
])
def test_torch_single_ops(flops, call, closed):
    """test_op (padding 1: 6 + 2 - 4 + 1 = 5 outputs a side) and test_addmm_out."""
    assert 2 * macs(call) == 2 * closed == flops


def test_torch_backward():
    """test_backward: 5184 FLOPs. mm (4x5)(5x6) and bmm over 7 of (4x6)(6x7), each backward only toward the input
    that requires grad: twice each forward."""
    def f(a):
        return torch.bmm(torch.mm(a, T(5, 6)).unsqueeze(0).expand(7, 4, 6), T(7, 6, 7))

    closed = 2 * (4 * 5 * 6 + 7 * 4 * 6 * 7)
    assert 2 * macs(f, T(4, 5, requires_grad=True), backward=True) == 2 * closed == 5184


def test_torch_backward_twice_and_an_autograd_function():
    """test_backward_reset (960 FLOPs: a.mm(a.t()) and its backward, twice) and test_autograd_op (750: an
    autograd.Function whose forward is one 5x5 mm and whose backward is two)."""
    def twice(a):
        for _ in range(2):
            a.mm(a.t()).sum().backward()
        return a

    class Squared(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.mm(x, x)

        @staticmethod
        def backward(ctx, grad):
            return torch.mm(grad, grad) + torch.mm(grad, grad)

    assert 2 * macs(twice, T(4, 5, requires_grad=True)) == 2 * 2 * (3 * 4 * 5 * 4) == 960
    assert 2 * macs(Squared.apply, T(5, 5, requires_grad=True), backward=True) == 2 * 3 * 125 == 750


def test_torch_convs_and_transposed_convs():
    """test_convs: forward FLOPs 32 (conv_transpose2d of a 2x2 input, 2x2 kernel) and 8 (1x1 conv on 2x2); a
    backward with input and weight requiring grad is twice the forward, for each channel layout.
    test_conv_transpose_loop: 1,536,000 FLOPs for 50 steps of ConvTranspose2d(4, 8, 2, stride 2) on 4x30x2,
    each step its forward and the weight's gradient (the input needs none)."""
    x, w = T(1, 1, 2, 2, requires_grad=True), T(1, 1, 2, 2, requires_grad=True)
    assert 2 * macs(F.conv_transpose2d, x, w) == 2 * (4 * 1 * 4) == 32                  # input pixels x C_out x k^2
    assert 2 * macs(F.conv2d, x, T(1, 1, 1, 1, requires_grad=True)) == 2 * 4 == 8
    for c_in, c_out in [(1, 1), (1, 3), (3, 1), (3, 7), (2, 4), (4, 2)]:
        x = T(1, c_in, 4, 4, requires_grad=True)
        for conv, weight, forward in [(F.conv2d, (c_out, c_in, 2, 2), 3 * 3 * c_in * c_out * 4),
                                      (F.conv_transpose2d, (c_in, c_out, 2, 2), 4 * 4 * c_in * c_out * 4)]:
            assert macs(conv, x, T(*weight, requires_grad=True)) == forward
            assert macs(conv, x, T(*weight, requires_grad=True), backward=True) == 3 * forward
    model = nn.ConvTranspose2d(4, 8, 2, stride=2)

    def loop(x):
        for _ in range(50):
            model(x).sum().backward()
        return x
    assert 2 * macs(loop, T(1, 4, 30, 2)) == 2 * 50 * 2 * (4 * 30 * 2 * 8 * 4) == 1_536_000


def test_torch_nested_modules_returning_pytrees():
    """test_pytrees: 12,000 FLOPs of mm in two modules, each mm(x, x) of 10x10 with its backward toward both
    operands (they are one tensor); 6,000 for one such module returning a tuple."""
    class Square(nn.Module):
        def forward(self, x):
            x = x["a"].relu_()
            return {"a": torch.mm(x, x)}

    two = nn.Sequential(Square(), Square())
    closed = 1000 + 2 * 1000                                      # forward, then grad of the left and right x
    x = T(10, 10, requires_grad=True).clone()
    with torch.enable_grad():
        counter = counted_call(Call(lambda d: two(d)["a"]), {"a": x}, backward=True)
    assert 2 * (counter.forward_macs + counter.backward_macs) == 2 * 2 * closed == 12_000
    assert 2 * macs(lambda y: torch.mm(y, y), T(10, 10, requires_grad=True), backward=True) == 2 * closed == 6000


def resnet18_forward_macs(side: int = 224, classes: int = 1000) -> int:
    """torchvision's ResNet-18 (He et al. 2016, Table 1): the 7x7 stride-2 stem, a stride-2 max pool, four stages
    of two basic blocks (two 3x3 convs), a 1x1 projection where a stage halves the grid, and the classifier."""
    total = (side // 2) ** 2 * 64 * 3 * 7 * 7
    c_in, grid = 64, side // 4
    for stage, c in enumerate((64, 128, 256, 512)):
        grid //= 1 if stage == 0 else 2
        for block in range(2):
            first = c_in if block == 0 else c
            total += grid * grid * c * (first * 9 + c * 9) + (grid * grid * c * first if first != c else 0)
        c_in = c
    return total + 512 * classes


@pytest.fixture(scope="module")
def resnet18():
    with torch.device("meta"):
        return tvm.resnet18()


def test_torch_resnet18_forward_and_backward(resnet18):
    """test_module: 10,884,440,064 FLOPs for a forward and backward of an image that requires grad (every conv
    and the classifier: input and weight gradients, twice the forward); ResNet.layer1's convs 924,844,032."""
    image = torch.empty(1, 3, 224, 224, device="meta", requires_grad=True)
    total = macs(resnet18, image, backward=True)
    assert 2 * total == 2 * 3 * resnet18_forward_macs() == 10_884_440_064
    layer1 = macs_under(macs_by_module(resnet18, 224), "layer1")
    assert 2 * layer1 == 2 * 4 * (56 * 56 * 64 * 64 * 9) == 924_844_032


def test_torch_inference_mode_counts_the_same(resnet18):
    """test_inference_mode: the same total (and layer1's) under torch.inference_mode as without it."""
    image = torch.empty(1, 3, 224, 224, device="meta")
    plain = macs(resnet18, image, grad_mode=torch.no_grad)
    assert macs(resnet18, image, grad_mode=torch.inference_mode) == plain == resnet18_forward_macs()
    with torch.inference_mode():
        counter, _, _ = run_forward(resnet18, image)
    assert macs_under(counter.macs_by_module, "layer1") == 4 * (56 * 56 * 64 * 64 * 9)


SDPA_KERNELS = ["_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                "_scaled_dot_product_cudnn_attention"]


@pytest.mark.parametrize("lk, forward_flops", [(128, 134_217_728), (256, 268_435_456)])
def test_torch_sdpa_forward_on_every_kernel(lk, forward_flops):
    """test_sdpa (CUDA in torch's suite; the formulas on the same shapes here): batch 4, 8 heads, 128 queries,
    `lk` keys, head dim 64, causal (counted whole, as torch does): the same count for math and every fused kernel."""
    q, k, v = (torch.empty(4, 8, n, 64, device="meta") for n in (128, lk, lk))
    closed = 4 * 8 * 128 * lk * (64 + 64)                                  # QK^T + AV
    for name in SDPA_KERNELS + ["_scaled_dot_product_attention_math"]:
        assert 2 * MAC_RULES[getattr(aten, name)](q, k, v, out=None) == 2 * closed == forward_flops
    assert 2 * macs(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)) == forward_flops


def test_torch_sdpa_backward_leaves_out_the_recompute():
    """test_sdpa's backward at 256 keys: torch counts 805,306,368 FLOPs forward + backward for math (3x the
    forward) but 939,524,096 for flash and memory-efficient, whose backward also recomputes QK^T. We count the
    backward's four matmuls on every kernel (op_rules: recompute is not counted): torch's math figure."""
    q, k, v = (torch.empty(4, 8, n, 64, device="meta") for n in (128, 256, 256))
    forward = 4 * 8 * 128 * 256 * (64 + 64)
    for name in SDPA_KERNELS:
        backward = MAC_RULES[getattr(aten, f"{name}_backward")](torch.empty_like(q), q, k, v, out=None)
        assert 2 * (forward + backward) == 2 * 3 * forward == 805_306_368
    assert 939_524_096 - 805_306_368 == 2 * (4 * 8 * 128 * 256 * 64)         # torch's extra: one QK^T


@pytest.mark.parametrize("max_q, max_k", [(128, 128), (128, 256)])
def test_torch_sdpa_nested_equals_its_sequences_one_by_one(max_q, max_k):
    """test_sdpa_nested_tensor: 4 sequences of max/4, 2max/4, 3max/4 and max queries (and keys), 8 heads of 64:
    the packed variable-length kernel counts what the dense kernel counts over the sequences one by one."""
    lengths_q, lengths_k = ([m // 4 * i for i in (1, 2, 3, 4)] for m in (max_q, max_k))
    offsets = [torch.tensor([0, *torch.tensor(n).cumsum(0).tolist()]) for n in (lengths_q, lengths_k)]
    q, k = (torch.empty(sum(n), 8, 64) for n in (lengths_q, lengths_k))
    packed = MAC_RULES[aten._flash_attention_forward](q, k, k, *offsets, max_q, max_k, out=None)
    dense = sum(MAC_RULES[aten._scaled_dot_product_efficient_attention](
        torch.empty(1, 8, a, 64), torch.empty(1, 8, b, 64), torch.empty(1, 8, b, 64), out=None)
        for a, b in zip(lengths_q, lengths_k))
    assert packed == dense == sum(8 * a * b * (64 + 64) for a, b in zip(lengths_q, lengths_k))


# ---- fvcore's test_flop_count.py -------------------------------------------------------------------------------

@pytest.mark.parametrize("module, x, expected", [
    (nn.Linear(8, 4), T(5, 8), 5 * 8 * 4),                                  # test_nn
    (nn.Linear(10, 20), T(5, 10), 5 * 10 * 20),                             # test_linear
    (nn.Linear(10, 20), T(5, 5, 10), 5 * 10 * 5 * 20),                      # test_linear, 3-d input
])
def test_fvcore_linear(module, x, expected):
    assert macs(module, x, grad_mode=torch.no_grad) == expected


# (dims, batch, C_in, C_out, side, kernel, padding, stride, groups, transposed, output_padding): test_conv's nine
FVCORE_CONVS = [(2, 5, 10, 3, 15, 3, 1, 1, 1, False, 0), (2, 2, 10, 6, 20, 3, 1, 2, 1, False, 0),
                (2, 5, 16, 8, 15, 5, 2, 1, 4, False, 0), (2, 5, 16, 8, 15, 3, 1, 1, 8, False, 0),
                (1, 5, 10, 3, 15, 3, 1, 1, 1, False, 0), (3, 5, 10, 3, 15, 3, 1, 1, 1, False, 0),
                (2, 5, 10, 3, 15, 3, 1, 1, 1, True, 0), (2, 5, 10, 3, 15, 3, 1, 2, 1, True, 0),
                (2, 5, 10, 3, 15, 3, 1, 3, 1, True, 2)]


@pytest.mark.parametrize("dims, batch, c_in, c_out, side, kernel, padding, stride, groups, transposed, out_pad",
                         FVCORE_CONVS)
def test_fvcore_conv(dims, batch, c_in, c_out, side, kernel, padding, stride, groups, transposed, out_pad):
    """fvcore's closed form: batch x C_in x C_out x k^d x S^d / groups, S the output side (the input's for a
    transposed conv: each input pixel meets C_out / groups x k^d weights)."""
    layer = (getattr(nn, f"ConvTranspose{dims}d")(c_in, c_out, kernel, stride, padding, out_pad, groups=groups)
             if transposed else getattr(nn, f"Conv{dims}d")(c_in, c_out, kernel, stride, padding, groups=groups))
    spatial = side if transposed else (side + 2 * padding - kernel) // stride + 1
    expected = batch * c_in * c_out * kernel ** dims * spatial ** dims // groups
    assert macs(layer, T(batch, c_in, *[side] * dims), grad_mode=torch.no_grad) == expected


@pytest.mark.parametrize("call, inputs, expected", [
    (torch.matmul, (T(20, 10), T(10, 100)), 20 * 10 * 100),                 # test_matmul
    (torch.matmul, (T(1, 20, 10), T(1, 10, 100)), 20 * 10 * 100),          # test_matmul_broadcast
    (torch.matmul, (T(2, 2, 20, 10), T(2, 2, 10, 100)), 4 * 20 * 10 * 100),
    (torch.matmul, (T(1, 20, 10), T(10, 100)), 20 * 10 * 100),
    (torch.matmul, (T(2, 20, 10), T(10, 100)), 2 * 20 * 10 * 100),
    (torch.bmm, (T(2, 5, 2), T(2, 2, 12)), 2 * 2 * 12 * 5),                 # test_bmm (nct, ntp -> ncp)
    (lambda x, y: torch.einsum("nct,ncp->ntp", x, y), (T(1, 5, 2), T(1, 5, 12)), 1 * 2 * 12 * 5),   # test_einsum
    (lambda x, y: torch.einsum("ntg,ncg->nct", x, y), (T(1, 2, 6), T(1, 5, 6)), 1 * 2 * 6 * 5),
    (lambda x, y: torch.einsum("nc,nchw->hw", x, y), (T(3, 4), T(3, 4, 2, 3)), 72),   # test_complicated_einsum
    (torch.mm, (T(3, 4), T(4, 5)), 60),                                     # test_torch_mm
    (torch.matmul, (T(3, 4), T(4, 5)), 60),
])
@pytest.mark.parametrize("grad_mode", [torch.no_grad, torch.inference_mode])
def test_fvcore_matmuls_and_einsums(call, inputs, expected, grad_mode):
    assert macs(call, *inputs, grad_mode=grad_mode) == expected


@pytest.mark.parametrize("norm, shape", [(nn.BatchNorm1d(10, affine=False).eval(), (10, 10)),
                                         (nn.BatchNorm2d(10, affine=False), (10, 10, 5, 5)),
                                         (nn.BatchNorm3d(10, affine=False), (10, 10, 5, 5, 5))])
def test_fvcore_batchnorm_is_outside_our_convention(norm, shape):
    """test_batchnorm: fvcore counts a norm (1 flop per element in eval, 4 training); our convention counts 0 MACs
    for norms (their FLOPs are in non_mac_flops). The parameterless module is counted, not refused."""
    assert macs(norm, T(*shape), grad_mode=torch.no_grad) == 0


class ThreeLayers(nn.Module):
    """test_threeNet's shape: a 1x1 conv 2 -> 5, global average pooling, Linear(5, 3), Linear(3, 1)."""

    def __init__(self):
        super().__init__()
        self.conv, self.pool = nn.Conv2d(2, 5, 1), nn.AdaptiveAvgPool2d(1)
        self.linear1, self.linear2 = nn.Linear(5, 3), nn.Linear(3, 1)

    def forward(self, x):
        return self.linear2(self.linear1(self.pool(self.conv(x)).flatten(1)))


def test_fvcore_three_layers_by_module():
    """test_threeNet / test_flop_counter_class on a batch of 4 at 10x10: conv 4,000, linear1 60, linear2 12;
    fvcore adds 2,000 for the pooling, which our convention leaves out."""
    model = ThreeLayers()
    with torch.no_grad():
        counter = counted_call(model, T(4, 2, 10, 10))
    closed = {"conv": 4 * 5 * 2 * 10 * 10, "linear1": 4 * 5 * 3, "linear2": 4 * 3 * 1}
    assert dict(counter.macs_by_module) == closed and counter.forward_macs == 4072


# ---- fvcore's test_jit_model_analysis.py -----------------------------------------------------------------------

class Inner(nn.Module):
    """NestedNet's submodule: a 1x1 Conv1d 2 -> 2 on 5 positions, then Linear(10, 10)."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv1d(2, 2, 1), nn.Linear(10, 10)

    def forward(self, x):
        return 3 * self.fc(self.conv(x.reshape(-1, 2, 5)).flatten(1)) + 1


class Outer(nn.Module):
    """NestedNet: a Conv1d 4 -> 4 (kernel 3, padding 1) on 5 positions, Linear(20, 10), then Inner."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc, self.submod = nn.Conv1d(4, 4, 3, padding=1), nn.Linear(20, 10), Inner()

    def forward(self, x):
        return self.submod(self.fc(self.conv(x).flatten(1))) ** 2


def test_fvcore_nested_modules_by_module():
    """test_total / test_by_module: each module's MACs, its submodules' included."""
    with torch.no_grad():
        by_module = counted_call(Outer(), T(1, 4, 5)).macs_by_module
    closed = {"conv": 5 * 3 * 4 * 4, "fc": 20 * 10, "submod.conv": 5 * 1 * 2 * 2, "submod.fc": 10 * 10}
    closed |= {"submod": closed["submod.conv"] + closed["submod.fc"], "": sum(closed.values())}
    assert {name: macs_under(by_module, name) for name in closed} == closed
    assert closed[""] == 560


class Calls(nn.Module):
    """fvcore's UnusedNet, RepeatedNet, NonForwardNet, SharedModuleNet and RecursiveScopeNet, as one module
    whose `case` picks the forward."""

    def __init__(self, case: str):
        super().__init__()
        self.case = case
        self.fc1, self.fc2, self.out, self.unused = nn.Linear(10, 10), nn.Linear(10, 10), nn.Linear(10, 1), \
            nn.Linear(20, 20)
        shared, self.multiname1 = nn.Linear(10, 10), nn.Linear(10, 1)
        self.submod1, self.submod2 = nn.Sequential(shared), nn.Sequential(shared)
        self.multiname2 = self.multiname1

    def forward(self, x, depth: int = 3):
        if self.case == "unused":
            return self.out(torch.relu(self.fc1(x)))
        if self.case == "repeated":
            return self.fc2(self.fc2(self.fc1(self.fc1(self.fc1(x)))))
        if self.case == "shared":
            x = self.submod1(x) + self.submod2(x)
            return self.multiname1(x) + self.multiname2(x)
        if self.case == "non_forward":                 # a submodule's layer called by the parent, not by it
            return self.submod1[0](self.fc1(x))
        return self(x, depth - 1) if depth else self.fc1(x)      # recursive


@pytest.mark.parametrize("case, closed", [
    ("unused", {"fc1": 100, "out": 10, "unused": 0, "": 110}),             # UnusedNet
    ("repeated", {"fc1": 3 * 100, "fc2": 2 * 100, "": 500}),               # RepeatedNet
    ("non_forward", {"fc1": 100, "submod1": 100, "submod1.0": 100}),       # NonForwardNet, "owner" mode
    ("shared", {"submod1.0": 2 * 100, "multiname1": 2 * 10, "": 220}),     # SharedModuleNet: first names
    ("recursive", {"fc1": 100, "": 100}),                                  # RecursiveScopeNet: once
])
def test_fvcore_scopes(case, closed):
    with torch.no_grad():
        by_module = counted_call(Calls(case), T(1, 10)).macs_by_module
    assert {name: macs_under(by_module, name) for name in closed} == closed


def test_fvcore_data_parallel_root():
    """test_data_parallel_root_scope: Linear(10, 10) on 10 rows inside DataParallel (no GPU: it runs the module)."""
    assert macs(nn.DataParallel(nn.Linear(10, 10)).cpu(), T(10, 10), grad_mode=torch.no_grad) == 1000
