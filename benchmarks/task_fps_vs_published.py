"""Whole detectors and segmenters on a V100, predicted (zoo.compare --predict V100 --detector/--segmenter: the
calibrated forward of the whole model, and --metrics train for the training step) against the published V100
columns of mmdetection and mmsegmentation. Prints a markdown table with the ratio predicted / published and the
median error.

    python benchmarks/task_fps_vs_published.py

Published figures (the index's copies, read for issue 40):
- open-mmlab/mmdetection@0190d6b configs/mask_rcnn/README.md, "Inf time (fps)": Mask R-CNN R-50-FPN pytorch 1x
  16.1. docs/en/model_zoo.md@10e91fd, Common settings: "the total time of network forwarding and
  post-processing, excluding the data loading time" (tools/analysis_tools/benchmark.py, 2000 images, batch 1);
  its comparison with Detectron2 (8 Tesla V100 32G, PyTorch 1.4, CUDA 10.1): Mask R-CNN inference 19.6 fps and
  training 0.265 s/iter (mask_rcnn_r50_caffe_fpn_poly_1x_coco_v1.py: 2 images per GPU, SGD, fp32).
- open-mmlab/mmsegmentation@0b127a5 configs/upernet/README.md, ADE20K, "Inf time (fps)": UPerNet R-50 512x512
  80k 23.40 (upernet_r50: test_cfg mode 'whole', fp32). open-mmlab/mmsegmentation@104429b configs/convnext/
  README.md, ADE20K: UperNet ConvNeXt-T / S / B 512x512 19.90 / 15.18 / 14.41, ConvNeXt-B / L / XL 640x640
  10.88 / 7.69 / 6.33 (upernet_convnext_*_fp16_*: fp16, test_cfg mode 'slide', crop 512 stride 341; 640 configs
  crop 640 stride 426). docs/en/model_zoo.md@94f9cb4: fps over 200 images with cudnn.benchmark=False, forward
  and post-processing; speed benchmark hardware 8 Tesla V100 (32G), PyTorch 1.5.
Recipes as counted here:
- Test images: COCO's common 640 x 480 resized to at most 1333 x 800 (800 x 1067) and padded to a multiple of
  32: 800 x 1088. ADE20K's test resize (2048, 512) with keep_ratio takes a 4:3 image to 512 x 683 (640 x 853 for
  the 640 configs); 'whole' runs it at once, 'slide' runs mmseg's windows (zoo.models.segmenters.slide: two of
  512 x 512, or two of 640 x 640), one forward each, so fps = 1 / (windows x the window's time).
- Not counted: post-processing (mmdet's NMS beside the RoI heads is counted, not the mask paste; mmseg's logits
  resized to the image and argmax), data loading is excluded by both. Attention does not occur in these
  backbones. archzoo's R-50 is timm's (7 x 7 stem; mmseg's ResNetV1c has three 3 x 3 convs, mmdet's caffe style
  strides the 1 x 1); the mmseg fp16 configs are taken as torch.autocast (mmcv's wrap_fp16_model on torch >= 1.6).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEVICE = "V100 SXM2"
MMDET = "mmdetection@0190d6b configs/mask_rcnn/README.md"
MMDET_ZOO = "mmdetection@10e91fd docs/en/model_zoo.md (comparison with Detectron2)"
MMSEG_UPER = "mmsegmentation@0b127a5 configs/upernet/README.md"
MMSEG_CNX = "mmsegmentation@104429b configs/convnext/README.md"
# (label, backbone, detector, segmenter, image (h, w), dtype, slide (crop, stride) or None, published fps, source)
INFERENCE = (
    ("Mask R-CNN R-50-FPN 1x", "resnet50", "maskrcnn", None, (800, 1088), "fp32", None, 16.1, MMDET),
    ("Mask R-CNN R-50-FPN (caffe)", "resnet50", "maskrcnn", None, (800, 1088), "fp32", None, 19.6, MMDET_ZOO),
    ("UperNet R-50 512x512 80k", "resnet50", None, "upernet", (512, 683), "fp32", None, 23.40, MMSEG_UPER),
    ("UperNet ConvNeXt-T 512", "convnext_t", None, "upernet", (512, 683), "fp16", (512, 341), 19.90, MMSEG_CNX),
    ("UperNet ConvNeXt-S 512", "convnext_s", None, "upernet", (512, 683), "fp16", (512, 341), 15.18, MMSEG_CNX),
    ("UperNet ConvNeXt-B 512", "convnext_b", None, "upernet", (512, 683), "fp16", (512, 341), 14.41, MMSEG_CNX),
    ("UperNet ConvNeXt-B 640", "convnext_b", None, "upernet", (640, 853), "fp16", (640, 426), 10.88, MMSEG_CNX),
    ("UperNet ConvNeXt-L 640", "convnext_l", None, "upernet", (640, 853), "fp16", (640, 426), 7.69, MMSEG_CNX),
    ("UperNet ConvNeXt-XL 640", "convnext_xl", None, "upernet", (640, 853), "fp16", (640, 426), 6.33, MMSEG_CNX),
)
# (label, backbone, detector, image, batch per GPU, dtype, optimizer, published img/s per GPU, source)
TRAINING = (
    ("Mask R-CNN R-50-FPN (caffe) 1x", "resnet50", "maskrcnn", (800, 1088), 2, "fp32", "sgd", 2 / 0.265, MMDET_ZOO),
)


def inference_rows() -> list[dict]:
    from zoo.models.segmenters.slide import windows
    from zoo.options import datasheet
    from zoo.predict.decision import Counts
    from zoo.runs.request import Request

    counts, rows, sheet = Counts(), [], datasheet(DEVICE)
    for label, model, detector, segmenter, (h, w), dtype, slide, published, source in INFERENCE:
        size, passes = ((h, w), 1) if slide is None else ((slide[0], slide[0]), len(windows(h, w, *slide)))
        row = counts.row(Request(model, size, 1, dtype, detector=detector, segmenter=segmenter), sheet).to_json()
        fps = row["imgs_per_s"] / passes
        rows.append({"label": label, "what": f"{h}x{w}, {dtype}" + (f", {passes} windows of {size[0]}" if slide
                                                                    else ""),
                     "fps": fps, "p10": row["imgs_per_s_p10"] / passes, "p90": row["imgs_per_s_p90"] / passes,
                     "published": published, "source": source})
    return rows


def training_rows() -> list[dict]:
    from zoo.options import datasheet
    from zoo.predict.train import predict_train
    from zoo.runs.request import Request

    rows = []
    for label, model, detector, size, batch, dtype, optimizer, published, source in TRAINING:
        row = predict_train(Request(model, size, batch, dtype, train=True, detector=detector, optimizer=optimizer),
                            datasheet(DEVICE), foreach=False)
        rows.append({"label": label, "what": f"{size[0]}x{size[1]}, {batch} / GPU, {dtype}, {optimizer}, for-loop",
                     "fps": row["train_imgs_per_s"], "p10": row["train_imgs_per_s_p10"],
                     "p90": row["train_imgs_per_s_p90"], "published": published, "source": source})
    return rows


def table(rows: list[dict], unit: str) -> str:
    lines = [f"| model | counted as | predicted {unit} (p10-p90) | published | predicted / published | band covers | "
             f"source |", "|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        covers = "yes" if r["p10"] <= r["published"] <= r["p90"] else "no"
        lines.append(f"| {r['label']} | {r['what']} | {r['fps']:.1f} ({r['p10']:.1f}-{r['p90']:.1f}) | "
                     f"{r['published']:.3g} | **{r['fps'] / r['published']:.2f}** | {covers} | {r['source']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    inference, training = inference_rows(), training_rows()
    print(f"PREDICTED on {DEVICE}, against published V100 columns\n")
    print(table(inference, "img/s"))
    errors = [abs(r["fps"] / r["published"] - 1) for r in inference]
    covered = sum(r["p10"] <= r["published"] <= r["p90"] for r in inference)
    print(f"inference: median |predicted / published - 1| = {statistics.median(errors):.2f} over {len(errors)} rows "
          f"(max {max(errors):.2f}); the band covers {covered} of {len(errors)}\n")
    print(table(training, "train img/s per GPU"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
