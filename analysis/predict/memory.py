"""What a training step holds on a CUDA GPU at its peak, as torch.cuda.max_memory_allocated reports it (the
`Mem (GB)` columns of mmdetection, mmsegmentation and detectron2 are that figure, per GPU).

- fp32 master weights and buffers (torch.autocast keeps the module in fp32; fp32 training too);
- one fp32 gradient per trainable parameter, present through the step (torch 1.x's zero_grad() zeroes them in
  place; set_to_none frees them between steps, which only lowers the forward's share);
- the optimizer's fp32 state: AdamW exp_avg and exp_avg_sq (2 per parameter), SGD's momentum buffer (1);
- the step's activation peak, counted on meta with autocast's casts (analysis.count.autocast: fp32 norms,
  softmax and losses, half copies of weights saved for backward), the task's loss (analysis.count.losses) and
  what backward allocates (gradients of activations in flight), each tensor booked as the caching allocator
  books it (analysis.count.allocator: 512-byte rounding, a large block keeping its segment's tail);
- the optimizer step's temporaries, a second candidate for the peak after backward has freed the activations:
  torch 2.14.1's foreach AdamW (torch/optim/adam.py `_multi_tensor_adam`: exp_avg_sq_sqrt =
  torch._foreach_sqrt(device_exp_avg_sqs)) and SGD with weight decay (torch/optim/sgd.py `_multi_tensor_sgd`:
  device_grads = torch._foreach_add(device_grads, device_params, ...)) each allocate one fp32 tensor per
  parameter at once; torch 1.x's for-loop step only one parameter's;
- trained data parallel (`data_parallel`), DistributedDataParallel's gradient buckets: one flat fp32 tensor per
  bucket that together hold a copy of every trainable parameter's gradient, allocated when DDP is built and kept
  (its default gradient_as_bucket_view=False: the torch docstring, torch/nn/parallel/distributed.py of torch
  2.14.1 lines 731-736, "the saved memory size will be equal to the total gradients size"; pytorch/pytorch@
  00413201d3d38d5b5bb039180220d5a0d6c74052 torch/csrc/distributed/c10d/reducer.cpp Reducer::initialize_buckets,
  `replica.contents = at::empty({offset}, options)`, the torch 1.x reducer the published runs used).
NB: cuDNN and cuBLAS workspaces are not counted (cudnn.benchmark tries algorithms with workspaces of its
own choosing), nor the CUDA context (max_memory_allocated excludes it too).
"""
from __future__ import annotations

from analysis.count.allocator import block_bytes
from analysis.count.losses import classification_loss, segmentation_loss

OPTIMIZER_STATES = {"sgd": ("SGD with momentum", 1), "adamw": ("AdamW", 2)}   # fp32 state tensors per parameter

# detectron2 config/defaults.py (facebookresearch/detectron2@02b5c4e) ROI_HEADS.BATCH_SIZE_PER_IMAGE = 512,
# POSITIVE_FRACTION = 0.25; mmdetection's rcnn train_cfg RandomSampler num=512, pos_fraction=0.25: the box
# heads see 512 sampled RoIs per image, the mask head the positives among them (at most 128)
TRAIN_ROIS = {"proposals": 512, "mask_rois": 128}
# torch/nn/parallel/distributed.py (torch 2.14.1): _DEFAULT_BUCKET_CAP_MB = 25, _MB_TO_BYTES = 1024 * 1024; the
# first bucket's cap is dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB); a bucket closes once it reaches its cap
# (dist._compute_bucket_assignment_by_size)
DDP_BUCKET_CAP_BYTES = 25 * 1024 * 1024
DDP_FIRST_BUCKET_BYTES = 1024 * 1024


def task_loss(request):
    """The loss a training step of `request` runs: per-pixel cross-entropy for a segmenter, cross-entropy for a
    classifier, and the outputs' sum for detectors and feature extractors (their losses read small tensors)."""
    if request.segmenter is not None:
        return segmentation_loss
    if request.detector is None and not request.features:
        return classification_loss
    return None


def _booked(tensors) -> int:
    """Bytes booked for these tensors, each its own allocation (a shared one once)."""
    seen, total = set(), 0
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            total += block_bytes(t.numel() * 4)                 # held in fp32
    return total


def ddp_buckets(trainable) -> list[int]:
    """Bytes of each of DistributedDataParallel's fp32 gradient buckets over these parameters (in order): the
    first closes once it holds 1 MiB, the others 25 MiB."""
    buckets, filled, cap = [], 0, DDP_FIRST_BUCKET_BYTES
    for p in trainable:
        filled += p.numel() * 4
        if filled >= cap:
            buckets, filled, cap = buckets + [filled], 0, DDP_BUCKET_CAP_BYTES
    return buckets + [filled] if filled else buckets


def ddp_bucket_bytes(trainable) -> int:
    """Bytes the caching allocator books for the buckets, each one allocation."""
    return sum(block_bytes(b) for b in ddp_buckets(trainable))


def step_peak(held_bytes: int, act_peak_bytes: int, step_temp_bytes: int) -> tuple[int, str]:
    """A step's peak and its phase: backward's (everything held + the activation peak) or the optimizer step's
    (everything held + its temporaries), whichever is larger."""
    backward, step = held_bytes + act_peak_bytes, held_bytes + step_temp_bytes
    return max(backward, step), "backward" if backward >= step else "optimizer step"


def step_parts(module, x, act_peak_bytes: int, optimizer: str, foreach: bool = True,
               data_parallel: bool = False) -> dict:
    """The parts of a training step's memory and its peak (step_peak). `data_parallel`: trained with
    DistributedDataParallel, which holds its gradient buckets besides the gradients."""
    trainable = [p for p in module.parameters() if p.requires_grad]
    name, states = OPTIMIZER_STATES[optimizer]
    grads = _booked(trainable)
    parts = {"weight_bytes": _booked([*module.parameters(), *module.buffers()]), "grad_bytes": grads,
             "optimizer_bytes": states * grads, "input_bytes": block_bytes(x.numel() * x.element_size()),
             "ddp_bucket_bytes": ddp_bucket_bytes(trainable) if data_parallel else 0}
    largest = max((block_bytes(p.numel() * 4) for p in trainable), default=0)
    step_temp = grads if foreach else largest
    total, phase = step_peak(sum(parts.values()), act_peak_bytes, step_temp)
    return {**parts, "train_act_peak_bytes": act_peak_bytes, "optimizer_step_temp_bytes": step_temp,
            "train_bytes": total, "peak_phase": phase, "optimizer": name,
            "trainable_params": sum(p.numel() for p in trainable)}
