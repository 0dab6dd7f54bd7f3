"""The ViT paper's pre-training compute on TPU v3, recomputed by the training prediction beside the paper's
TPUv3-core-days (the recipes, their sources and the rows: zoo.predict.pretraining). Prints markdown tables:
the recipes with the ratio predicted / published, the headline ratio ViT / BiT-L, and the ratio against the
batch per chip, which the ViT paper does not state.

    python benchmarks/vit_tpu_core_days.py [--batch-per-chip 32] [--sweep 8,16,32,64,128]

EXTRAPOLATION: no published TPU table exists to fit, so the chip's step is the counted step timed by the shared
GPU factors (analysis.predict.calibration, fitted on five sources' inference and training tables) on the chip's
datasheet roofline, with the band of an architecture no source ran (docs/prediction.md). The paper's figures are
compared with, never fitted on.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def recipes_table(rows: list[dict]) -> str:
    from zoo.report.tpu_compute import tpu_table

    return tpu_table(rows)


def headline(rows: list[dict]) -> str:
    """The paper's claim, ViT's pre-training compute as a fraction of BiT-L's, predicted and published."""
    bit = next(r for r in rows if r["model"] == "bit_r152x4")
    return "\n".join(f"{r['model']} ({r['pretraining']}, {r['epochs']} ep) / BiT-L: predicted "
                     f"{r['core_days'] / bit['core_days']:.3f}, paper {r['paper_core_days'] / bit['paper_core_days']:.3f}"
                     for r in rows[:2]) + "\n"


def sweep_table(batches: list[int]) -> str:
    """predicted / paper against the batch per chip, for the three recipes Table 2 names (the 14- and 90-epoch
    readings)."""
    from zoo.options import datasheet
    from zoo.predict.pretraining import DEVICE, RECIPES, core_days, predicted_step

    sheet = datasheet(DEVICE)
    picked = [r for r in RECIPES if r.epochs in (14, 90)]
    lines = ["| batch per chip | " + " | ".join(f"{r.model} {r.pretraining} {r.epochs} ep" for r in picked) + " |",
             "|---:|" + "---:|" * len(picked)]
    for batch in batches:
        cells = []
        for r in picked:
            days = core_days(predicted_step(sheet, r.model, batch, r.optimizer), r.images, r.epochs, batch,
                             sheet.cores_per_chip)[0]
            cells.append(f"{days:,.0f} ({days / r.paper_core_days:.2f})")
        lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from zoo.options import datasheet
    from zoo.predict.pretraining import DEVICE, VIT_BATCH_PER_CHIP, VIT_PAPER, predicted_rows

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-per-chip", type=int, default=VIT_BATCH_PER_CHIP, help="the ViT runs' (unstated)")
    parser.add_argument("--sweep", default="8,16,32,64,128", help="batches per chip for the last table ('' none)")
    args = parser.parse_args(argv)
    rows = predicted_rows(datasheet(DEVICE), args.batch_per_chip)
    print(f"PREDICTED on {DEVICE} (an extrapolation of the GPU-fitted factors), bf16, 224 px; paper: {VIT_PAPER} "
          f"Table 2\n")
    print(recipes_table(rows))
    print(headline(rows))
    if args.sweep:
        print("\npredicted core-days (predicted / paper) against the batch per chip\n")
        print(sweep_table([int(b) for b in args.sweep.split(",")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
