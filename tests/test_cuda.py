"""The CUDA path on a real GPU: MACs per SDPA kernel, memory peaks against the meta prediction, OOM halving,
fp16 GradScaler training, TF32, CUDA-event timing and MFU. Marked `cuda`, skipped without a GPU;
benchmarks/device_check.sh runs them with every other `cuda`-marked test (`pytest -m cuda`)."""
import functools
import gc
import time
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import zoo
from analysis.count.closed_form import ViTShape, vit_macs
from analysis.count.cost import cost_record
from analysis.predict.devices import DEVICE_SHEETS
from analysis.size import Size
from analysis.timing.backends import EagerBackend, TimingSetting
from analysis.timing.harness import time_model
from analysis.timing.latency import TimingProtocol, timed_loop
from analysis.timing.peak import measure_peak_flops
from analysis.timing.steps import make_inference_step, make_train_step, random_input


def measure_throughput(model, img_size, batch_size, device="cuda", dtype="fp32", mode="inference",
                       protocol=TimingProtocol(warmup=1, min_iters=3, min_seconds=0.0),
                       macs=None) -> dict:
    """The eager backend through the one harness; with macs, the run layer's MFU against a fresh GEMM peak."""
    from zoo.runs.timed import mfu_fields

    setting = TimingSetting(device=device, dtype=dtype, mode=mode)
    result = time_model(model, EagerBackend(), Size.of(img_size), batch_size, setting, protocol)
    record = result.as_fields()
    if macs is not None and result.imgs_per_s:
        record.update(mfu_fields(macs, result.imgs_per_s, measure_peak_flops(device, dtype), torch.device(device),
                                 setting))
    return record

HAS_CUDA = torch.cuda.is_available()


def cuda_test(fn):
    """Marked `cuda` (selected by -m cuda) and skipped without a GPU."""
    return pytest.mark.cuda(pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")(fn))


MiB, GiB = 2**20, 2**30

VIT_B16 = ViTShape(embed_dim=768, depth=12, mlp_dim=3072, patch_size=16)
VIT_TI16 = ViTShape(embed_dim=192, depth=12, mlp_dim=768, patch_size=16)
HEADS, HEAD_DIM = 12, 64                      # ViT-B/16
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
FUSED_OPS = {"flash": "_scaled_dot_product_flash_attention", "efficient": "_scaled_dot_product_efficient_attention",
             "cudnn": "_scaled_dot_product_cudnn_attention"}
# A backend that refuses is skipped, except where it must run: math anywhere, memory-efficient from
# sm50, flash (fp16/bf16) from sm80. cuDNN attention depends on the cuDNN build, so it may skip.
MUST_RUN_FROM = {"math": (0, 0), "efficient": (5, 0), "flash": (8, 0)}
QUICK = TimingProtocol(warmup=1, min_iters=3, min_seconds=0.0)


def vit_train_macs(parts: dict) -> int:
    """Forward + backward MACs of one ViT training step, from the closed form's parts: the backward of
    each weight matmul is 2x its forward (grad of input and of weight), the patch embedding's only 1x
    (its input, the image, needs no grad), and the SDPA backward 2x its forward (dS K, dS^T Q, P^T dO, dO V^T)."""
    weight_matmuls = parts["attn_proj"] + parts["mlp"] + parts["head"]
    backward = 2 * weight_matmuls + parts["patch_embed"] + 2 * parts["attn_matmul"]
    return parts["total"] + backward


@pytest.fixture(autouse=True)
def _free_gpu_memory():
    """Each test leaves an empty cache behind, so one test's cached blocks cannot shape the next's peaks."""
    yield
    gc.collect()
    if HAS_CUDA:
        torch.cuda.empty_cache()


def gpu_name() -> str:
    return torch.cuda.get_device_name() if HAS_CUDA else ""


def is_hopper_class() -> bool:
    return any(name in gpu_name() for name in ("H100", "H200"))


def require_backend(name: str, shape: tuple, dtype: torch.dtype, train: bool) -> None:
    """Skip if this device/dtype refuses SDPA backend `name` for q, k, v of `shape` (fail where it must run)."""
    batch, heads, tokens, head_dim = shape       # q, k, v as the model makes them: views of one qkv tensor
    qkv = torch.randn(batch, tokens, 3, heads, head_dim, device="cuda", dtype=dtype, requires_grad=train)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    try:
        with warnings.catch_warnings(record=True) as caught, sdpa_kernel(BACKENDS[name]):
            warnings.simplefilter("always")
            out = F.scaled_dot_product_attention(q, k, v)
            if train:
                out.sum().backward()
            torch.cuda.synchronize()
    except RuntimeError as e:
        reasons = "; ".join(str(w.message).splitlines()[0] for w in caught)[:400]
        why = f"SDPA backend {name} refused {tuple(shape)} {dtype}: {str(e).splitlines()[0]} ({reasons})"
        if name in MUST_RUN_FROM and torch.cuda.get_device_capability() >= MUST_RUN_FROM[name]:
            pytest.fail(why + f" -- it must run on capability {torch.cuda.get_device_capability()}")
        pytest.skip(why)


def test_train_mac_formula_matches_meta_count():
    """CPU, not marked cuda: the formula the CUDA test below relies on agrees with the meta count."""
    for shape, name, size in ((VIT_TI16, "vit_ti16", 224), (VIT_TI16, "vit_ti16", 384), (VIT_B16, "vit_b16", 224)):
        record = cost_record(zoo.create_model(name, img_size=size, device="meta"), size).as_dict()
        assert record["train_macs"] == vit_train_macs(vit_macs(shape, size)), (name, size)


# ---- MACs counted from real CUDA kernels ---------------------------------------------------------

@pytest.mark.parametrize("img_size", (224, 384))
@pytest.mark.parametrize("backend", list(BACKENDS))
@cuda_test
def test_macs_equal_closed_form_per_sdpa_backend(backend, img_size):
    tokens = (img_size // 16) ** 2 + 1
    require_backend(backend, (1, HEADS, tokens, HEAD_DIM), torch.float16, train=True)
    model = zoo.create_model("vit_b16", img_size=img_size, device="cuda", dtype=torch.float16)
    with sdpa_kernel(BACKENDS[backend]):
        record = cost_record(model, img_size, batch_size=1, dtype=torch.float16, train=True).as_dict()
    parts = vit_macs(VIT_B16, img_size)
    if backend == "math":
        assert record["attn_path"].startswith("math:"), record["attn_path"]
    else:
        assert record["attn_path"] == f"fused:{FUSED_OPS[backend]}"
    counted = (record["macs"], record["attn_macs"], record["train_macs"])
    expected = (parts["total"], parts["attn_matmul"], vit_train_macs(parts))
    assert counted == expected, f"(macs, attn, train) {counted} != {expected}; uncounted {record['uncounted_ops']}"


# ---- CUDA memory peaks against the meta prediction ----------------------------------------------

MEM_BATCH = 64


@functools.lru_cache(maxsize=None)
def meta_peaks(fused: bool) -> tuple[int, int]:
    """(forward, training step) activation peak of ViT-B/16 fp16 at 224 and MEM_BATCH, predicted on meta
    with the fused SDPA kernel's outputs (out, logsumexp) or with the math path's (scores, softmax)."""
    model = zoo.create_model("vit_b16", img_size=224, device="meta", dtype=torch.float16)
    record = cost_record(model, 224, batch_size=MEM_BATCH, dtype=torch.float16, emulate_fused_sdpa=fused).as_dict()
    return record["act_peak_bytes"], record["train_act_peak_bytes"]


def memory_tolerance(phase: str, predicted: int) -> int:
    """What max_memory_allocated may add to (or miss from) the meta prediction, which sees only tensors
    that ops return:
    - the caching allocator rounds every block up to 512 bytes: < 1 MiB over a few hundred live tensors;
    - logsumexp shapes differ by kernel (flash and cuDNN: B x H x N fp32; memory-efficient pads N to a
      multiple of 32; on meta the CPU flash kernel's B x H x N): < 10 MiB here over 12 layers;
    - workspaces allocated inside kernels, invisible at the dispatcher: cuBLAS/cuBLASLt (kept after
      first use; the warm-up step allocates them before the measured one), the patch-embedding conv's
      cuDNN workspace, and in the backward flash's fp32 dQ accumulator (B x ceil(N/128)*128 x H x D x 4
      = 48 MiB at B=64), memory-efficient's grad accumulators, cuDNN attention's workspace. They are
      transient but the backward ones coincide with the training peak (all activations still saved);
    - math on CUDA and the math decomposition on meta are the same ATen code (scores, softmax upcast
      to fp32), but the two torch versions (CUDA machine vs CPU) may differ in a copy or two.
    Hence 10% of the prediction plus 64 MiB (forward) or 128 MiB (training step). The fused and math
    predictions differ by much more than twice that (checked), so a kernel that materialised the
    N x N map where the fused one should not, or the reverse, fails."""
    return int(0.10 * predicted) + (64 if phase == "forward" else 128) * MiB


@pytest.mark.parametrize("backend", list(BACKENDS))
@cuda_test
def test_cuda_memory_peak_matches_meta_prediction(backend):
    require_backend(backend, (MEM_BATCH, HEADS, 197, HEAD_DIM), torch.float16, train=True)
    fused = backend != "math"
    predicted, other = meta_peaks(fused), meta_peaks(not fused)
    model = zoo.create_model("vit_b16", img_size=224, device="cuda", dtype=torch.float16)
    with sdpa_kernel(BACKENDS[backend]):
        # warm-up: cuBLAS/cuDNN handles and workspaces, kernel selection; then the measured run
        cost_record(model, 224, batch_size=MEM_BATCH, dtype=torch.float16, train=True)
        measured = cost_record(model, 224, batch_size=MEM_BATCH, dtype=torch.float16, train=True).as_dict()
    rows = (("forward", predicted[0], other[0], measured["cuda_peak_bytes"], measured["act_peak_bytes"]),
            ("train", predicted[1], other[1], measured["train_cuda_peak_bytes"], measured["train_act_peak_bytes"]))
    report = "; ".join(f"{phase}: cuda {cuda / MiB:.1f} MiB, meta {pred / MiB:.1f} MiB "
                       f"(tolerance {memory_tolerance(phase, pred) / MiB:.1f}), tracker on cuda {seen / MiB:.1f} MiB, "
                       f"{'math' if fused else 'fused'} prediction {alt / MiB:.1f} MiB"
                       for phase, pred, alt, cuda, seen in rows)
    for phase, pred, alt, cuda, _ in rows:
        tolerance = memory_tolerance(phase, pred)
        assert abs(alt - pred) > 2 * tolerance, f"{phase}: the band cannot tell fused from math; {report}"
        assert cuda is not None and abs(cuda - pred) <= tolerance, f"{backend} {phase}: {report}"


# ---- a real out-of-memory -----------------------------------------------------------------------

@cuda_test
def test_out_of_memory_halves_the_batch_and_records_it():
    model = zoo.create_model("vit_b16", img_size=224)
    getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    previous = getter() if getter else 1.0
    torch.cuda.empty_cache()
    # 4 GiB above what this process holds: fp32 weights + grads + momentum + fp16 weight casts ~1.2 GiB;
    # a ViT-B/16 training step's activations are ~57 MiB per image in fp16 (meta count), so batch 256
    # (~14 GiB) and 128 (~7 GiB) cannot fit, whatever else the allocator rounds.
    cap = torch.cuda.memory_reserved() + 4 * GiB
    torch.cuda.set_per_process_memory_fraction(cap / torch.cuda.get_device_properties(0).total_memory)
    try:
        record = measure_throughput(model, 224, batch_size=256, device="cuda", dtype="fp16", mode="train",
                                    protocol=QUICK)
    finally:
        torch.cuda.set_per_process_memory_fraction(previous)
    oom = record["oom_batch_sizes"]
    assert record["requested_batch_size"] == 256
    assert oom[:2] == [256, 128], record["error"]
    assert all(b == a // 2 for a, b in zip(oom, oom[1:])), oom
    assert record["ran_batch_size"] == oom[-1] // 2 >= 1, (record["ran_batch_size"], oom)
    assert record["error"].count("OutOfMemoryError") == len(oom), record["error"]
    assert record["iters"] >= 3 and record["imgs_per_s"] > 0


# ---- fp16 training with GradScaler, and TF32 ------------------------------------------------------

@cuda_test
def test_fp16_training_with_grad_scaler_updates_weights(monkeypatch):
    scales = []
    original_update = torch.amp.GradScaler.update

    def update(self, *args, **kwargs):            # records the loss scale after every GradScaler step
        original_update(self, *args, **kwargs)
        scales.append(self.get_scale())

    monkeypatch.setattr(torch.amp.GradScaler, "update", update)
    torch.manual_seed(0)
    model = zoo.create_model("vit_ti16", img_size=224)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    record = measure_throughput(model, 224, batch_size=32, device="cuda", dtype="fp16", mode="train",
                                protocol=TimingProtocol(warmup=1, min_iters=5, min_seconds=0.0))
    assert record["error"] is None and record["ran_batch_size"] == 32
    assert len(scales) == 1 + record["iters"], f"GradScaler updated {len(scales)} times in {1 + record['iters']} steps"
    assert all(0 < s < float("inf") for s in scales), scales
    after = {name: p.detach().float().cpu() for name, p in model.named_parameters()}
    assert all(torch.isfinite(p).all() for p in after.values()), "non-finite weights after fp16 training"
    # 2-D weights (qkv, proj, fc1, fc2, head) are ~0.02: an SGD step of lr 1e-4 moves every one of them
    # unless GradScaler skipped every step (inf/nan gradients each time; then the scale halves each time).
    unchanged = [n for n, p in after.items() if p.dim() == 2 and torch.equal(p, before[n].float())]
    assert not unchanged, f"weights unchanged after fp16 steps (scales {scales}): {unchanged[:5]}"
    device = torch.device("cuda")
    step = make_train_step(model, random_input(32, Size(224, 224), device, False), device, "fp16")
    losses = [float(step()) for _ in range(3)]
    assert all(torch.isfinite(torch.tensor(losses))), losses


@cuda_test
def test_tf32_is_recorded_and_raises_the_fp32_gemm_peak():
    previous = torch.backends.cuda.matmul.allow_tf32
    peaks, recorded = {}, {}
    try:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            peaks[tf32] = measure_peak_flops("cuda", "fp32")["peak_flops"]
            model = zoo.create_model("vit_ti16", img_size=224)
            recorded[tf32] = measure_throughput(model, 224, batch_size=8, device="cuda", dtype="fp32",
                                                protocol=QUICK)["env"]["tf32"]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    assert recorded[False].startswith("matmul=off") and recorded[True].startswith("matmul=on"), recorded
    ratio = peaks[True] / peaks[False]
    # Datasheets: H100/H200 SXM fp32 67 TFLOPS on CUDA cores, TF32 495 dense on tensor cores (7.4x);
    # A100 19.5 vs 156 (8x). cuBLAS reaches ~60-80% of either, so > 2x is clear of noise. GeForce
    # cards run TF32 no faster than fp32 (dense), so elsewhere only the recording is checked.
    if any(name in gpu_name() for name in ("H100", "H200", "A100")):
        assert ratio > 2.0, f"TF32 on/off fp32 GEMM peak {peaks[True] / 1e12:.1f}/{peaks[False] / 1e12:.1f} TFLOP/s"


# ---- CUDA-event timing against wall time, and MFU -------------------------------------------------

@cuda_test
def test_cuda_event_span_matches_host_clock_over_the_same_loop():
    device = torch.device("cuda")
    model = zoo.create_model("vit_b16", img_size=224, device="cuda")
    step = make_inference_step(model, random_input(256, Size(224, 224), device, False), device, "fp16")
    torch.cuda.synchronize()
    start = time.perf_counter()
    run = timed_loop(step, device, TimingProtocol(warmup=2, min_iters=10, min_seconds=0.0))  # syncs at the end
    host = time.perf_counter() - start - run.warmup_seconds
    # the host span adds only the first event's launch and the final sync's return (microseconds)
    assert abs(host - run.total_seconds) <= 0.05 * run.total_seconds + 0.005, (host, run.total_seconds)
    summed = sum(run.latencies_s)
    # events bracket each iteration inside the span; a GPU-bound loop (~15 ms of GEMMs per step at batch 256,
    # the host launching ahead) leaves no idle gap between iterations
    assert 0.95 * run.total_seconds <= summed <= run.total_seconds * 1.001 + 1e-5, (summed, run.total_seconds)


@cuda_test
def test_harness_latencies_agree_with_wall_time():
    model = zoo.create_model("vit_b16", img_size=224)
    torch.cuda.synchronize()
    start = time.perf_counter()
    record = measure_throughput(model, 224, batch_size=256, device="cuda", dtype="fp16",
                                protocol=TimingProtocol(warmup=2, min_iters=10, min_seconds=0.0))
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    summed = sum(record["latencies_ms"]) / 1e3
    assert record["iters"] == len(record["latencies_ms"]) >= 10
    assert 0.95 * record["total_seconds"] <= summed <= record["total_seconds"] * 1.001 + 1e-5, \
        (summed, record["total_seconds"])
    # the call also moves the model and warms up: wall covers all of it
    assert record["total_seconds"] + record["warmup_seconds"] <= wall, (record["total_seconds"], wall)
    assert record["env"]["gpu_name"] == gpu_name()


@cuda_test
def test_mfu_against_measured_and_datasheet_peaks():
    macs = vit_macs(VIT_B16, 224)["total"]
    model = zoo.create_model("vit_b16", img_size=224)
    record = measure_throughput(model, 224, batch_size=128, device="cuda", dtype="fp16", macs=macs,
                                protocol=TimingProtocol(warmup=2, min_iters=10, min_seconds=0.5))
    assert 0 < record["mfu"] < 1.5, record["mfu"]
    assert record["mfu"] == pytest.approx(2 * macs * record["imgs_per_s"] / record["peak_flops"], rel=1e-9)
    cuda_names = [part for sheet in DEVICE_SHEETS.values() for part in sheet.cuda_names]
    known = any(part in gpu_name() for part in cuda_names)
    if is_hopper_class() or known:
        assert record["datasheet_peak_flops"] and record["mfu_datasheet"] is not None, \
            f"{gpu_name()!r}: no datasheet peak (the sheets' cuda_names: {cuda_names})"
        assert 0 < record["mfu_datasheet"] < 1.5, record["mfu_datasheet"]
        assert record["mfu_datasheet"] == pytest.approx(
            record["mfu"] * record["peak_flops"] / record["datasheet_peak_flops"], rel=1e-9)
    else:
        assert record["datasheet_peak_flops"] is None and record["mfu_datasheet"] is None
