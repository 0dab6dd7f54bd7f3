"""The counter takes any aten call (issue 54, item 6): out= variants, modules with no parameters, nested (jagged)
tensors, and composite ops met whole under torch.inference_mode. Every expected count is a closed form
(m x k x n for a matmul, H x Lq x Lk x (E + Ev) for attention), written out in the test."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import zoo
from zoo_cost import Call, build, counted_call

from analysis.count.cost import cost_record

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype")
GRAD_MODES = [torch.no_grad, torch.inference_mode, torch.enable_grad]


# ---- out= variants ---------------------------------------------------------------------------------------------

def _out_calls():
    a, b, c = torch.randn(4, 5), torch.randn(5, 6), torch.randn(4, 6)
    x, y, z = torch.randn(3, 4, 5), torch.randn(3, 5, 6), torch.randn(3, 4, 6)
    v = torch.randn(5)
    return [  # (name, call, closed form)
        ("mm", lambda: torch.mm(a, b, out=torch.empty(4, 6)), 4 * 5 * 6),
        ("addmm", lambda: torch.addmm(c, a, b, out=torch.empty(4, 6)), 4 * 5 * 6),
        ("matmul", lambda: torch.matmul(a, b, out=torch.empty(4, 6)), 4 * 5 * 6),
        ("bmm", lambda: torch.bmm(x, y, out=torch.empty(3, 4, 6)), 3 * 4 * 5 * 6),
        ("baddbmm", lambda: torch.baddbmm(z, x, y, out=torch.empty(3, 4, 6)), 3 * 4 * 5 * 6),
        ("mv", lambda: torch.mv(a, v, out=torch.empty(4)), 4 * 5),
        ("dot", lambda: torch.dot(v, v, out=torch.empty(())), 5),
    ]


@pytest.mark.parametrize("name, call, expected", _out_calls(), ids=[c[0] for c in _out_calls()])
def test_an_out_variant_is_counted_as_the_op(name, call, expected):
    """torch's own suite counts torch.mm(x, x, out=y) (test_addmm_out); here every matmul's out= form."""
    with torch.no_grad():
        counter = counted_call(Call(lambda: call()))
    assert counter.forward_macs == expected and not counter.uncounted_ops


class MmIntoBuffer(nn.Module):
    """torch.mm(a, b, out=c) on the image's first 8 values per image, into a preallocated c."""

    def forward(self, x):
        a = x.flatten(1)[:, :8]                                         # (B, 8)
        c = torch.empty(a.shape[0], 5, dtype=x.dtype, device=x.device)  # (B, 5)
        torch.mm(a, torch.ones(8, 5, dtype=x.dtype, device=x.device), out=c)
        return c


def test_mm_with_out_inside_a_counted_module_gives_its_macs():
    record = zoo.count(MmIntoBuffer(), 4, batch_size=3)
    assert record.macs == 8 * 5 and record.uncounted_ops == []          # per image: (1 x 8) @ (8 x 5)


# ---- modules with no parameters --------------------------------------------------------------------------------

PARAMETERLESS = {
    "AdaptiveAvgPool2d": lambda: nn.AdaptiveAvgPool2d(1),
    "Identity": nn.Identity,
    "BatchNorm2d(affine=False)": lambda: nn.BatchNorm2d(3, affine=False),              # buffers only
    "BatchNorm2d(affine=False, no stats)": lambda: nn.BatchNorm2d(3, affine=False, track_running_stats=False),
    "ReLU": nn.ReLU,
    "MaxPool2d": lambda: nn.MaxPool2d(2),
}


@pytest.mark.parametrize("name", PARAMETERLESS)
@pytest.mark.parametrize("train", [False, True])
def test_a_module_without_parameters_costs_nothing(name, train):
    record = zoo.count(PARAMETERLESS[name](), 224, train=train)
    assert (record.macs, record.params, record.uncounted_ops) == (0, 0, [])
    assert record.dtype == "fp32" and record.attn_path == "none"
    assert record.train_macs == (0 if train else None)


class Gram(nn.Module):
    """No parameters, one batched matmul: the (C x C) Gram matrix of each image's channels."""

    def forward(self, x):
        f = x.flatten(2)                                  # (B, C, HW)
        return f @ f.transpose(1, 2)                      # (B, C, C)


def test_a_parameterless_module_that_multiplies_is_counted():
    record = zoo.count(Gram(), (6, 10), batch_size=2)
    assert record.macs == 3 * (6 * 10) * 3 and record.params == 0      # C x HW x C per image


def test_counting_leaves_the_module_as_it_was():
    """A freshly built module is in training mode: its BatchNorm would update its running statistics in a forward
    (and a training step would overwrite its gradients); the count runs on it in eval mode, or on a copy."""
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    module[0].weight.grad = torch.ones_like(module[0].weight)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    conv_macs = (14 * 14) * 4 * 3 * 9                                  # out pixels x C_out x C_in x k^2
    assert zoo.count(module, 16).macs == conv_macs
    assert zoo.count(module, 16, train=True).train_macs == conv_macs + conv_macs     # grad of the weight only
    assert module.training and torch.equal(module[0].weight.grad, torch.ones_like(module[0].weight))
    assert all(torch.equal(v, before[k]) for k, v in module.state_dict().items())


def test_another_dtype_is_counted_on_a_copy():
    module = nn.Conv2d(3, 8, 1)
    record = zoo.count(module, 8, dtype="bf16")
    assert record.dtype == "bf16" and record.weight_bytes == (8 * 3 + 8) * 2
    assert module.weight.dtype == torch.float32
    assert zoo.count(module.double(), 8).dtype == "float64"


@pytest.mark.parametrize("call, message", [
    (lambda: zoo.count("vit_b16", 224), "a torch.nn.Module to count, not str"),
    (lambda: zoo.count(nn.Identity(), 224, batch_size=0), "batch_size must be a positive integer, not 0"),
    (lambda: zoo.count(nn.Identity(), "224x"), "input_size: '' is not an integer"),
    (lambda: zoo.count(nn.Identity(), 0), "input_size: a size's height is a positive integer, not 0"),
    (lambda: zoo.count(nn.Identity(), 8, dtype="fp64"), "dtype must be a torch dtype or fp32, bf16, fp16"),
])
def test_bad_arguments_are_one_clear_error(call, message):
    with pytest.raises(zoo.ZooError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


# ---- nested (jagged) tensors -----------------------------------------------------------------------------------

HEADS, HEAD_DIM = 2, 4


def jagged(lengths, channels=HEADS * HEAD_DIM, seed=0):
    """(B, j, C) jagged tokens: sequence b has lengths[b] tokens."""
    generator = torch.Generator().manual_seed(seed)
    return torch.nested.as_nested_tensor([torch.randn(n, channels, generator=generator) for n in lengths],
                                         layout=torch.jagged)


def heads(tokens):
    """(B, j, H x E) -> (B, H, j, E)"""
    return tokens.unflatten(-1, (HEADS, HEAD_DIM)).transpose(1, 2)


@pytest.mark.parametrize("grad_mode", GRAD_MODES)
def test_jagged_sdpa_costs_each_sequence_its_own_attention(grad_mode):
    lengths = (3, 5, 2)
    with grad_mode():       # NB: made inside: torch's jagged SDPA refuses, under inference_mode, one made outside
        counter = counted_call(Call(lambda t: F.scaled_dot_product_attention(t, t, t)), heads(jagged(lengths)))
    # QK^T and AV of each sequence alone: H x L x L x (E + Ev)
    assert counter.forward_macs == sum(HEADS * n * n * (HEAD_DIM + HEAD_DIM) for n in lengths)
    assert not counter.uncounted_ops
    # torch's test_sdpa_nested_tensor: the nested count is the dense count of its sequences one by one
    dense = 0
    for n in lengths:
        t = torch.randn(1, HEADS, n, HEAD_DIM)
        with grad_mode():
            dense += counted_call(Call(lambda: F.scaled_dot_product_attention(t, t, t))).forward_macs
    assert counter.forward_macs == dense


def test_a_linear_layer_on_jagged_tokens_and_a_nested_matmul():
    lengths, out_features = (3, 5), 6
    with torch.no_grad():
        linear = counted_call(nn.Linear(HEADS * HEAD_DIM, out_features), jagged(lengths))
        a = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
        b = torch.nested.nested_tensor([torch.randn(3, 5), torch.randn(3, 7)])
        matmul = counted_call(Call(torch.matmul), a, b)
    assert linear.forward_macs == sum(lengths) * HEADS * HEAD_DIM * out_features
    assert matmul.forward_macs == 2 * 3 * 5 + 4 * 3 * 7


class JaggedAttention(nn.Module):
    """Keeps 3 + 2b tokens of image b and attends within each: variable-length attention inside a model."""

    def forward(self, x):
        tokens = x.flatten(2).transpose(1, 2)                             # (B, HW, C)
        q = heads(torch.nested.as_nested_tensor([tokens[b, :3 + 2 * b] for b in range(x.shape[0])],
                                                layout=torch.jagged))
        return F.scaled_dot_product_attention(q, q, q).values()


@pytest.mark.parametrize("grad_mode", GRAD_MODES[:2])
def test_jagged_attention_inside_a_counted_module(grad_mode):
    with grad_mode():
        record = cost_record(JaggedAttention(), 4, batch_size=2, train=False, in_chans=HEADS * HEAD_DIM)
    total = sum(HEADS * n * n * 2 * HEAD_DIM for n in (3, 5))
    assert record.macs == total // 2 and record.uncounted_ops == []


def test_nested_tensors_on_meta_are_refused_clearly():
    from analysis.count.op_rules import call_macs, rule_for

    a = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    b = torch.nested.nested_tensor([torch.randn(3, 5), torch.randn(3, 5)])
    assert call_macs(rule_for(torch.ops.aten.bmm.default), (a, b), {}, torch.bmm(a, b)) == (2 + 4) * 3 * 5
    njt = jagged((2, 3)).to("meta")
    with pytest.raises(NotImplementedError, match="need real offsets"):
        call_macs(rule_for(torch.ops.aten.mm.default), (njt, njt), {}, njt)


# ---- composite ops met whole: torch.inference_mode -------------------------------------------------------------

class LinearThenEinsum(nn.Module):
    """1,000 MACs in a linear layer (10 tokens x 10 x 10), 200 in an einsum (10 x 10 x 2)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(10, 10)

    def forward(self, x):                                   # (1, 10, 10)
        h = self.proj(x)
        return torch.einsum("bij,bjk->bik", h, x[..., :2])


@pytest.mark.parametrize("grad_mode", GRAD_MODES)
def test_einsum_is_counted_whatever_the_grad_mode(grad_mode):
    with grad_mode():
        counter = counted_call(LinearThenEinsum(), torch.randn(1, 10, 10))
    assert counter.forward_macs == 10 * 10 * 10 + 10 * 10 * 2 and not counter.uncounted_ops


@pytest.mark.parametrize("name, size", [("vit_ti16", 64), ("swin_t", 64), ("resnet50", 64), ("eva02_b14", 56)])
def test_a_registry_model_counts_the_same_under_inference_mode(name, size):
    """Every field of the record, memory and bytes included: the same ops are seen."""
    module, _, _ = build(name, size)
    with torch.no_grad():
        plain = cost_record(module, size, train=False).as_dict()
    with torch.inference_mode():
        inference = cost_record(module, size, train=False).as_dict()
    assert inference == plain and math.prod((plain["macs"], plain["attn_macs"] or 1)) > 0


class OpNames:
    """An observer that keeps the name of every op it is shown."""

    def __init__(self):
        self.names = []

    def observe(self, func, args, kwargs, out):
        self.names.append(func.overloadpacket.__name__)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_an_op_with_a_kernel_of_its_own_runs_whole(device):
    """silu_backward has a CompositeImplicitAutograd kernel beside the device's own: a backward calls it below
    autograd and the device's kernel runs, one op (so the training step's memory is the kernel's, not that of the
    composite's intermediates). einsum has only the composite: under inference_mode it runs as its bmm."""
    from analysis.count.dispatch import ObservingMode

    x = torch.randn(4, 5, device=device, requires_grad=True)
    seen = OpNames()
    with ObservingMode([seen]):
        F.silu(x).sum().backward()
    assert "silu_backward" in seen.names and "sigmoid" not in seen.names
    seen = OpNames()
    with torch.inference_mode(), ObservingMode([seen]):
        torch.einsum("ij,jk->ik", x.detach(), x.detach().T)
    assert "einsum" not in seen.names and "bmm" in seen.names
