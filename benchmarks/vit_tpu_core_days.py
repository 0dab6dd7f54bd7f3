"""The ViT paper's pre-training compute on TPU v3, recomputed by the training prediction (zoo.runs.train_predicted
on the "TPU v3" datasheet, zoo.runs.train_hours for the schedule) beside the paper's TPUv3-core-days. Prints
markdown tables: the recipes with the ratio predicted / published, and the ratio against the batch per chip.

    python benchmarks/vit_tpu_core_days.py [--batch-per-chip 32] [--sweep 8,16,32,64,128]

EXTRAPOLATION: no published TPU table exists to fit, so the chip's step is the counted step timed by the
factors fitted on timm's RTX 3090 training table, on the chip's datasheet roofline (docs/training.md). The
paper's figures below are compared with, never fitted on.

Dosovitskiy et al., "An Image is Worth 16x16 Words", arXiv:2010.11929v2 (ICLR 2021), as read for issue 40:
- Table 2, row "TPUv3-core-days": ViT-H/14 (JFT) 2.5k, ViT-L/16 (JFT) 0.68k, ViT-L/16 (I21k) 0.23k, BiT-L
  (ResNet152x4) 9.9k, Noisy Student (EfficientNet-L2) 12.3k.
- Section 4.2: "the number of TPU v3 cores (2 per chip) used for training multiplied by the training time in
  days"; ViT-L/16 on ImageNet-21k "could be trained using a standard cloud TPUv3 with 8 cores in approximately
  30 days".
- Section 4.1, Datasets: ImageNet-21k "with 21k classes and 14M images", JFT "with 18k classes and 303M
  high-resolution images". Training: Adam (beta1 0.9, beta2 0.999), batch 4096, weight decay 0.1.
- Appendix B.1, Table 3 (hyperparameters for training; "Training resolution is 224", batch 4096): epochs
  ViT-L/16 on JFT-300M "7/14", ViT-H/14 on JFT-300M 14, ViT-L/{16,32} on ImageNet-21k "30/90".
- Appendix C, Table 6 (pre-training compute, exaFLOPs): ViT-L/16 7 epochs 783, 14 epochs 1567; ViT-H/14
  14 epochs 4262. Used only to check the counted FLOPs per image (exaFLOPs / (epochs x images)).
Which epochs Table 2's models trained is not stated. ViT-H/14 has one (14). For ViT-L/16 on JFT, Table 5's
ImageNet accuracy (87.12, fine-tuned at 384) is Table 6's 14-epoch row (87.12; the 7-epoch row has 86.30), so
the 14-epoch run is the paper's reference ViT-L/16; both readings are printed, and both for ImageNet-21k.
NB: the pre-training head (an MLP with one tanh hidden layer on 18k or 21k classes, section 3.1 and D.3) is
counted as timm's 1000-class linear head: under 0.1% of the step's FLOPs. Adam with weight decay is counted as
torch's AdamW (the same kernels). The batch per chip is not stated (nor the number of chips): --sweep shows
what it changes.

BiT-L, the paper's CNN baseline (9.9k core-days), from Kolesnikov et al., "Big Transfer (BiT)", arXiv:1912.11370v3
section 3.1 and 3.3 (Upstream Pre-Training): ResNet152x4 (ResNet-v2, Group Normalization, Weight
Standardization: timm's resnetv2_152x4_bit, the registry's bit_r152x4) on JFT-300M, SGD with momentum 0.9, 224 x
224, 40 epochs, global batch 4096 "on a Cloud TPUv3-512, resulting in 8 images per chip" (4096 / 512: BiT counts
the 512 cores; so 16 per chip of two cores, the batch counted here). JFT is taken at the ViT paper's 303M.
Noisy Student (12.3k) is not in the registry as trained (an EfficientNet-L2 at 800 px in a student-teacher loop)
and is left out.
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PAPER = "arXiv:2010.11929v2"
JFT, I21K = 303_000_000, 14_000_000          # section 4.1: "303M", "14M" images
# (model, pre-training data, its images, epochs (Table 3), Table 2's core-days, Table 6's exaFLOPs or None,
# optimizer, the batch per chip the recipe states or None for --batch-per-chip)
RECIPES = (
    ("vit_h14", "JFT-300M", JFT, 14, 2500, 4262, "adamw", None),
    ("vit_l16", "JFT-300M", JFT, 14, 680, 1567, "adamw", None),
    ("vit_l16", "JFT-300M", JFT, 7, 680, 783, "adamw", None),
    ("vit_l16", "ImageNet-21k", I21K, 90, 230, None, "adamw", None),
    ("vit_l16", "ImageNet-21k", I21K, 30, 230, None, "adamw", None),
    ("bit_r152x4", "JFT-300M", JFT, 40, 9900, None, "sgd", 16),       # BiT section 3.3
)
DEVICE = "TPU v3"


@functools.cache
def step(model: str, batch: int, optimizer: str = "adamw") -> dict:
    """The predicted training step of `model` at 224 px, bf16, `batch` per chip, with its counted FLOPs."""
    from zoo.runs.request import Request
    from zoo.runs.train_predicted import predict_train, train_step_ops

    request = Request(model, 224, batch, "bf16", train=True, optimizer=optimizer)
    row = predict_train(request, DEVICE)
    ops = train_step_ops(request, fused_attention=False)
    row["train_flops_per_image"] = sum(flops * n for _, flops, _, n in ops) / batch
    return row


def core_days(row: dict, images: int, epochs: int, batch: int) -> tuple[float, float, float]:
    """(expected, fast, slow) TPU core-days of the schedule on one chip (chip-days do not depend on the chip
    count but through the all-reduce, which is not counted: docs/training.md)."""
    from analysis.timing.devices import device_sheet
    from zoo.runs.train_hours import schedule

    band = (row["train_imgs_per_s_p10"] / row["train_imgs_per_s"], row["train_imgs_per_s_p90"] / row["train_imgs_per_s"])
    hours = schedule(row["train_step_ms"] / 1e3, band, batch, epochs, images, 1, 0.0)
    cores = device_sheet(DEVICE).cores_per_chip
    return tuple(hours[f"train_device_hours{end}"] * cores / 24 for end in ("", "_fast", "_slow"))


def recipes_table(batch: int) -> tuple[str, dict]:
    """The table, and the expected core-days per (model, epochs) for the headline ratios."""
    lines = [f"| model | pre-training | epochs | batch / chip | images seen | counted train GFLOPs / image "
             f"(Table 6) | img/s per chip (p10-p90) | predicted core-days (band) | paper core-days | "
             f"predicted / paper |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    found = {}
    for model, data, images, epochs, paper_days, exaflops, optimizer, stated in RECIPES:
        per_chip = stated or batch
        row = step(model, per_chip, optimizer)
        days, fast, slow = core_days(row, images, epochs, per_chip)
        found[model, epochs] = days
        paper_flops = f" ({exaflops * 1e18 / (epochs * images) / 1e9:.1f})" if exaflops else ""
        lines.append(f"| {model} | {data} | {epochs} | {per_chip} | {epochs * images / 1e9:.3g}e9 | "
                     f"{row['train_flops_per_image'] / 1e9:.1f}{paper_flops} | {row['train_imgs_per_s']:.1f} "
                     f"({row['train_imgs_per_s_p10']:.1f}-{row['train_imgs_per_s_p90']:.1f}) | {days:,.0f} "
                     f"({fast:,.0f}-{slow:,.0f}) | {paper_days:,} | **{days / paper_days:.2f}** |")
    return "\n".join(lines) + "\n", found


def headline(found: dict) -> str:
    """The paper's claim, ViT's pre-training compute as a fraction of BiT-L's, predicted and published."""
    bit = found["bit_r152x4", 40]
    return "\n".join(f"{model} ({data}, {epochs} ep) / BiT-L: predicted {found[model, epochs] / bit:.3f}, paper "
                     f"{paper / 9900:.3f}" for model, data, _, epochs, paper, *_ in RECIPES[:2]) + "\n"


def sweep_table(batches: list[int]) -> str:
    """predicted / paper against the batch per chip, for the three recipes Table 2 names (the 14- and 90-epoch
    readings)."""
    picked = [r for r in RECIPES if r[3] in (14, 90)]
    lines = ["| batch per chip | " + " | ".join(f"{m} {d} {e} ep" for m, d, _, e, *_ in picked) + " |",
             "|---:|" + "---:|" * len(picked)]
    for batch in batches:
        cells = []
        for model, _, images, epochs, paper_days, _, optimizer, _ in picked:
            days = core_days(step(model, batch, optimizer), images, epochs, batch)[0]
            cells.append(f"{days:,.0f} ({days / paper_days:.2f})")
        lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-per-chip", type=int, default=32)
    parser.add_argument("--sweep", default="8,16,32,64,128", help="batches per chip for the second table ('' none)")
    args = parser.parse_args(argv)
    print(f"PREDICTED on {DEVICE} (an extrapolation of the GPU-fitted factors), bf16, 224 px, ViT with AdamW at "
          f"{args.batch_per_chip} images per chip, BiT-L as its paper states; paper: {PAPER} Table 2\n")
    table, found = recipes_table(args.batch_per_chip)
    print(table)
    print(headline(found))
    if args.sweep:
        print("\npredicted core-days (predicted / paper) against the batch per chip\n")
        print(sweep_table([int(b) for b in args.sweep.split(",")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
