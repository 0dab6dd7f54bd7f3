"""Mixed-precision (and fp32) training memory, counted on meta as a CUDA GPU runs the step (zoo.runs.gpu_memory),
against published memory columns. Prints a markdown table with each recipe and the ratio counted / published.

    python benchmarks/train_memory_vs_published.py [--only NAME,...]

Published figures (opened for archzoo issue 31):
- open-mmlab/mmdetection@0de48fd configs/swin/README.md, Mask R-CNN table, "Mem (GB)": Swin-T 1x no-ms fp32 7.6;
  Swin-T 3x ms-crop fp32 10.2; Swin-T 3x ms-crop FP16 7.8; Swin-S 3x ms-crop FP16 11.9. mmdetection's default
  2 images per GPU, AdamW, no frozen stages, no checkpointing; FP16 is mmcv's Fp16OptimizerHook (torch.autocast
  with fp32 master weights); images resized to at most 1333 x 800, so the largest padded batch is 800 x 1344.
- facebookresearch/detectron2@13a99ca projects/ViTDet/README.md, COCO tables, "train mem (GB)": ViTDet ViT-B Mask
  R-CNN 10.9, Cascade 12.3; ViT-L 20.9, 22.3. 64 A100 GPUs at batch 64 (1 image per GPU), 1024 x 1024 (LSJ),
  AMP, AdamW, no activation checkpointing (the README marks checkpointing with *, only MViTv2-H).
Both columns are torch.cuda.max_memory_allocated; GB read as GiB (1024^3), as both loggers divide by 1024^2.
NB: archzoo's heads take the RoI counts of mmdetection's get_flops (1000 box RoIs, 100 mask RoIs per image),
not training's 512 sampled RoIs; ViTDet's Mask R-CNN has a 4conv1fc box head, archzoo's maskrcnn 2fc.
Attention is counted op by op (q @ k^T, softmax, @ v), as both codebases write it.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MMDET = "mmdetection@0de48fd configs/swin/README.md"
D2 = "detectron2@13a99ca projects/ViTDet/README.md"
# name, backbone, detector, (H, W), images per GPU, dtype, published GB, source and row
RECIPES = (
    ("swin_t_mask_1x_fp32", "swin_t", "maskrcnn", (800, 1344), 2, "fp32", 7.6, f"{MMDET}, Swin-T 1x, FP16 no"),
    ("swin_t_mask_3x_fp32", "swin_t", "maskrcnn", (800, 1344), 2, "fp32", 10.2, f"{MMDET}, Swin-T 3x ms-crop, FP16 no"),
    ("swin_t_mask_3x_fp16", "swin_t", "maskrcnn", (800, 1344), 2, "fp16", 7.8, f"{MMDET}, Swin-T 3x ms-crop, FP16 yes"),
    ("swin_s_mask_3x_fp16", "swin_s", "maskrcnn", (800, 1344), 2, "fp16", 11.9, f"{MMDET}, Swin-S 3x ms-crop, FP16 yes"),
    ("vitdet_b_mask", "vitdet_b16", "maskrcnn", (1024, 1024), 1, "fp16", 10.9, f"{D2}, COCO Mask R-CNN ViT-B"),
    ("vitdet_b_cascade", "vitdet_b16", "cascade_maskrcnn", (1024, 1024), 1, "fp16", 12.3, f"{D2}, COCO Cascade ViT-B"),
    ("vitdet_l_mask", "vitdet_l16", "maskrcnn", (1024, 1024), 1, "fp16", 20.9, f"{D2}, COCO Mask R-CNN ViT-L"),
    ("vitdet_l_cascade", "vitdet_l16", "cascade_maskrcnn", (1024, 1024), 1, "fp16", 22.3, f"{D2}, COCO Cascade ViT-L"),
)
GIB = 1024 ** 3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma list of recipe names")
    args = parser.parse_args(argv)
    from zoo.runs.gpu_memory import gpu_train_bytes
    from zoo.runs.request import Request

    wanted = set(filter(None, args.only.split(",")))
    print("| recipe | input, images/GPU | AMP | counted GiB (weights+grads+AdamW / activations) | published GB | "
          "counted / published | source |")
    print("|---|---|---|---:|---:|---:|---|")
    for name, model, detector, size, batch, dtype, published, source in RECIPES:
        if wanted and name not in wanted:
            continue
        start = time.perf_counter()
        request = Request(model, size, batch, dtype, train=True, detector=detector, optimizer="adamw")
        r = gpu_train_bytes(request, fused_attention=False)
        fixed = (r["weight_bytes"] + r["grad_bytes"] + r["optimizer_bytes"]) / GIB
        total = r["train_bytes"] / GIB
        amp = "fp16 autocast" if dtype == "fp16" else "no (fp32)"
        print(f"| {model} + {detector} | {size[0]}x{size[1]}, {batch} | {amp} | {total:.2f} ({fixed:.2f} / "
              f"{r['train_act_peak_bytes'] / GIB:.2f}) | {published} | {total / published:.2f} | {source} |", flush=True)
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
