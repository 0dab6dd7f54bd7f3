"""Mixed-precision (and fp32) training memory, counted on meta as a CUDA GPU runs the step (analysis.predict.memory),
against published memory columns. Prints a markdown table with each recipe and the ratio counted / published.

    python benchmarks/train_memory_vs_published.py [--only NAME,...]

Published figures (each is torch.cuda.max_memory_allocated per GPU; GB read as GiB, 1024^3, as the loggers
divide by 1024^2):
- open-mmlab/mmdetection@0de48fd configs/swin/README.md, Mask R-CNN table, "Mem (GB)": Swin-T 1x no-ms fp32 7.6;
  Swin-T 3x ms-crop fp32 10.2; Swin-T 3x ms-crop FP16 7.8; Swin-S 3x ms-crop FP16 11.9. mmdetection's default
  2 images per GPU, AdamW, no frozen stages, no checkpointing; FP16 is mmcv's Fp16OptimizerHook (torch.autocast
  with fp32 master weights); images grouped by their original aspect ratio (GroupSampler; mmdet/datasets/custom.py
  _set_group_flag reads the annotation's width / height) and each batch padded to its largest height and width
  (mmcv/parallel/collate.py). 1x: resized to at most 1333 x 800, so the largest padded batch is 800 x 1344. 3x
  ms-crop (DETR's AutoAugment): half the images are resized to a short side of 400-600, cropped to a random
  h and w each in [384, 600] (RandomCrop crop_type='absolute_range', mmdet/datasets/pipelines/transforms.py
  _get_crop_size) and resized again into (1333, 800) (mmcv/image/geometric.py rescale_size: factor
  min(1333 / long side, 800 / short side)): a 600 x 384 crop of a landscape image becomes 1250 x 800, portrait
  in a landscape group. Beside a 1333-wide image (padded to 32: 1344) the batch pads to 1280 x 1344, the
  largest the 3x pipeline makes, which sets max_memory_allocated over the run.
- facebookresearch/detectron2@02b5c4e projects/ViTDet/README.md, COCO tables, "train mem (GB)": ViTDet ViT-B Mask
  R-CNN 10.9, Cascade 12.3; ViT-L 20.9, 22.3. 64 GPUs at batch 64 (1 image per GPU), 1024 x 1024 (LSJ),
  train.amp.enabled = True (configs/COCO/mask_rcnn_vitdet_b_100ep.py), AdamW, no activation checkpointing (the
  README marks checkpointing with *, only MViTv2-H). Built with ViTDet's own heads (vitdet_maskrcnn,
  vitdet_cascade_maskrcnn: 2-conv RPN, 4conv1fc LN box heads, LN mask head).
- open-mmlab/mmsegmentation README tables, ADE20K, "Mem (GB)" (the index's copies: configs/convnext/README.md
  @104429b, configs/vit/README.md @08272b6, configs/upernet/README.md @0b127a5): UperNet ConvNeXt-T/S/B 512x512
  4.23 / 5.16 / 6.33, ConvNeXt-B 640x640 8.53 (configs upernet_convnext_*_fp16_*: 2 images per GPU, AdamW,
  Fp16OptimizerHook); ViT-B + MLN 9.20, DeiT-B + MLN 9.21 (upernet_vit-b16_mln_512x512_80k_ade20k.py: 2 images,
  AdamW, fp32); R-50 8.1 (upernet_r50_512x512_80k_ade20k.py: 4 images per GPU, SGD momentum 0.9, fp32).
  No frozen stages, no checkpointing. Left out: DeiT-S without the MLN neck (archzoo's plain-ViT UperNet always
  has it), the Cityscapes rows (19 classes; archzoo's UperNet has ADE20K's 150), R-101 (not in the registry).
Every published run trained data parallel (8 GPUs; ViTDet 64) with DistributedDataParallel at its default
gradient_as_bucket_view=False (mmcv@01fa6d2 mmcv/parallel/distributed.py: MMDistributedDataParallel subclasses
torch's; detectron2@2bfa3fb configs/common/train.py ddp: broadcast_buffers, find_unused_parameters,
fp16_compression only), so each GPU also holds DDP's fp32 gradient buckets (analysis.predict.memory).
NB: the training step samples 512 box RoIs per image and runs the mask head on 128 (analysis.predict.memory
TRAIN_ROIS); archzoo's R-50 is timm's (a 7x7 stem), mmseg's ResNetV1c has three 3x3 stem convs. Attention is
counted op by op (q @ k^T, softmax, @ v), as these codebases wrote it (torch 1.x, before fused SDPA); the
optimizer steps parameter by parameter (torch 1.x's default).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MMDET = "mmdetection@0de48fd configs/swin/README.md"
D2 = "detectron2@02b5c4e projects/ViTDet/README.md"
SEG = "mmsegmentation configs/{}/README.md, ADE20K"
# the largest padded batch of mmdetection's 3x ms-crop pipeline (above): a 1250 x 800 crop beside a 1333-wide image
MS_CROP_3X = (1280, 1344)
# name, backbone, task (detector or segmenter name), (H, W), images per GPU, dtype, optimizer, published GB,
# source and row
RECIPES = (
    ("swin_t_mask_1x_fp32", "swin_t", "maskrcnn", (800, 1344), 2, "fp32", "adamw", 7.6, f"{MMDET}, Swin-T 1x"),
    ("swin_t_mask_3x_fp32", "swin_t", "maskrcnn", MS_CROP_3X, 2, "fp32", "adamw", 10.2, f"{MMDET}, Swin-T 3x ms-crop"),
    ("swin_t_mask_3x_fp16", "swin_t", "maskrcnn", MS_CROP_3X, 2, "fp16", "adamw", 7.8,
     f"{MMDET}, Swin-T 3x ms-crop FP16"),
    ("swin_s_mask_3x_fp16", "swin_s", "maskrcnn", MS_CROP_3X, 2, "fp16", "adamw", 11.9,
     f"{MMDET}, Swin-S 3x ms-crop FP16"),
    ("vitdet_b_mask", "vitdet_b16", "vitdet_maskrcnn", (1024, 1024), 1, "fp16", "adamw", 10.9,
     f"{D2}, COCO Mask R-CNN ViT-B"),
    ("vitdet_b_cascade", "vitdet_b16", "vitdet_cascade_maskrcnn", (1024, 1024), 1, "fp16", "adamw", 12.3,
     f"{D2}, COCO Cascade ViT-B"),
    ("vitdet_l_mask", "vitdet_l16", "vitdet_maskrcnn", (1024, 1024), 1, "fp16", "adamw", 20.9,
     f"{D2}, COCO Mask R-CNN ViT-L"),
    ("vitdet_l_cascade", "vitdet_l16", "vitdet_cascade_maskrcnn", (1024, 1024), 1, "fp16", "adamw", 22.3,
     f"{D2}, COCO Cascade ViT-L"),
    ("upernet_convnext_t", "convnext_t", "upernet", (512, 512), 2, "fp16", "adamw", 4.23,
     f"{SEG.format('convnext')} ConvNeXt-T"),
    ("upernet_convnext_s", "convnext_s", "upernet", (512, 512), 2, "fp16", "adamw", 5.16,
     f"{SEG.format('convnext')} ConvNeXt-S"),
    ("upernet_convnext_b", "convnext_b", "upernet", (512, 512), 2, "fp16", "adamw", 6.33,
     f"{SEG.format('convnext')} ConvNeXt-B 512"),
    ("upernet_convnext_b_640", "convnext_b", "upernet", (640, 640), 2, "fp16", "adamw", 8.53,
     f"{SEG.format('convnext')} ConvNeXt-B 640"),
    ("upernet_vit_b_mln", "vit_b16", "upernet", (512, 512), 2, "fp32", "adamw", 9.20,
     f"{SEG.format('vit')} ViT-B + MLN 80k"),
    ("upernet_deit_b_mln", "deit_b", "upernet", (512, 512), 2, "fp32", "adamw", 9.21,
     f"{SEG.format('vit')} DeiT-B + MLN"),
    ("upernet_r50", "resnet50", "upernet", (512, 512), 4, "fp32", "sgd", 8.1, f"{SEG.format('upernet')} R-50 80k"),
)
GIB = 1024 ** 3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma list of recipe names")
    args = parser.parse_args(argv)
    from zoo.runs.gpu_memory import gpu_train_bytes
    from zoo.runs.request import Request

    wanted = set(filter(None, args.only.split(",")))
    print("| recipe | input, images/GPU | AMP | optimizer | counted GiB (held / activations) | peak in | "
          "published GB | counted / published | source |")
    print("|---|---|---|---|---:|---|---:|---:|---|")
    for name, model, task, size, batch, dtype, optimizer, published, source in RECIPES:
        if wanted and name not in wanted:
            continue
        start = time.perf_counter()
        which = {"segmenter": task} if task == "upernet" else {"detector": task}
        request = Request(model, size, batch, dtype, train=True, optimizer=optimizer, **which)
        r = gpu_train_bytes(request, fused_attention=False, foreach=False, data_parallel=True)
        held = r["weight_bytes"] + r["grad_bytes"] + r["ddp_bucket_bytes"] + r["optimizer_bytes"] + r["input_bytes"]
        total = r["train_bytes"] / GIB
        amp = "fp16 autocast" if dtype == "fp16" else "no (fp32)"
        print(f"| {model} + {task} | {size[0]}x{size[1]}, {batch} | {amp} | {r['optimizer']} | {total:.2f} "
              f"({held / GIB:.2f} / {r['train_act_peak_bytes'] / GIB:.2f}) | {r['peak_phase']} | {published} | "
              f"{total / published:.2f} | {source} |", flush=True)
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
