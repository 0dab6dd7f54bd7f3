"""The seeds' pre-training compute on TPU v3, committed beside the results: results/tpu_pretraining.json, one
predicted row per recipe (zoo.predict.pretraining), written whole by `zoo.report --refresh` and recomputed
by `--check` (counted on meta with the shipped calibration, so the same on any machine), and its report table."""
from __future__ import annotations

import json
from pathlib import Path

TPU_FILE = "tpu_pretraining.json"
HEADING = "Pre-training compute on TPU v3 (predicted, not measured)"
MAX_BYTES = 1 << 20
INTRO = ("PREDICTED, NOT MEASURED, and an EXTRAPOLATION: no published TPU table exists to fit, so each training step "
         "is counted on the meta device (bf16, attention op by op as XLA computes it) and timed by the factors fitted "
         "on timm's RTX 3090 training table, on the TPU v3 chip's datasheet roofline (cloud.google.com/tpu/docs/v3: "
         "two TensorCores, 123 TFLOPS bf16 and 900 GBps per chip). XLA's fusion, its memory planning, the input "
         "pipeline and the all-reduce are not modelled; the band is the GPU table's and is a floor on the error. "
         "Core-days = chip-days x 2, the unit of the ViT paper's Table 2 (arXiv:2010.11929v2, section 4.2). Recipes: "
         "the ViT paper's Table 3 epochs (both readings where it gives two), batch 4096, 224 px, 32 images per chip "
         "(not stated); BiT-L from its own paper (arXiv:1912.11370v3, section 3.3: 40 epochs, SGD, 16 per chip). "
         "Counted GFLOPs per image are checked against Table 6 where it gives the run. docs/training.md explains "
         f"every figure. Rows: results/{TPU_FILE} (`python -m zoo.report --refresh` writes it, `--check` recomputes "
         "it).")


def tpu_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / "results" / TPU_FILE


def fresh_text() -> str:
    from ..options import datasheet
    from ..predict.pretraining import DEVICE, predicted_rows
    from .gpu_predictions import rounded

    rows = [{k: rounded(v) for k, v in r.items()} for r in predicted_rows(datasheet(DEVICE))]
    return json.dumps(rows, indent=1, sort_keys=True, allow_nan=False) + "\n"


def write_tpu(results_dir: str | Path) -> Path:
    from ..store.safe_io import write_atomic

    path = tpu_path(results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, fresh_text())
    return path


NEEDED = {"model": str, "pretraining": str, "epochs": int, "batch_per_chip": int, "images_seen": int,
          "train_gflops_per_image": float, "imgs_per_s": float, "imgs_per_s_p10": float, "imgs_per_s_p90": float,
          "core_days": float, "core_days_fast": float, "core_days_slow": float, "paper_core_days": int}


def read_tpu(results_dir: str | Path) -> tuple[list[dict], str | None]:
    """(rows, None); ([], None) without a file; ([], why) for a file that is not a list of the rows written here."""
    from ..store.safe_io import read_stored, strict_loads

    text, why = read_stored(tpu_path(results_dir), f"results/{TPU_FILE}", MAX_BYTES)
    if text is None:
        return [], why
    try:
        rows = strict_loads(text)
    except ValueError as e:
        return [], f"results/{TPU_FILE} is not usable ({str(e).splitlines()[0] if str(e) else 'bad JSON'})"
    if not isinstance(rows, list):
        return [], f"results/{TPU_FILE} is not a list of rows"
    for n, row in enumerate(rows, 1):
        bad = [k for k, kind in NEEDED.items() if not isinstance(row, dict) or isinstance(row.get(k), bool)
               or not isinstance(row.get(k), (int, float) if kind is float else kind)]
        if bad:
            return [], f"results/{TPU_FILE} row {n}: {bad[0]} missing or not {NEEDED[bad[0]].__name__}"
    return rows, None


def stale_tpu(results_dir: str | Path) -> list[str]:
    """The committed file missing, unusable, or different from a fresh prediction."""
    from ..store.safe_io import read_stored

    text, why = read_stored(tpu_path(results_dir), f"results/{TPU_FILE}", MAX_BYTES)
    if why:
        return [why]
    if text is None:
        return [f"results/{TPU_FILE} is missing: run `python -m zoo.report --refresh`"]
    return [] if text == fresh_text() else [f"results/{TPU_FILE} differs from a fresh prediction: run "
                                            "`python -m zoo.report --refresh`"]


def tpu_table(rows: list[dict]) -> str:
    """The recipes, predicted core-days with the band, the paper's, and the ratio."""
    from ..console.markdown import markdown_table

    cells = []
    for r in rows:
        paper_flops = r.get("paper_gflops_per_image")
        cells.append([r["model"], r["pretraining"], r["epochs"], r["batch_per_chip"], f"{r['images_seen'] / 1e6:,.0f}",
                      f"{r['train_gflops_per_image']:.1f}" + (f" ({paper_flops:.1f})" if paper_flops else ""),
                      f"{r['imgs_per_s']:.1f} ({r['imgs_per_s_p10']:.1f}-{r['imgs_per_s_p90']:.1f})",
                      f"{r['core_days']:,.0f} ({r['core_days_fast']:,.0f}-{r['core_days_slow']:,.0f})",
                      f"{r['paper_core_days']:,}", f"**{r['core_days'] / r['paper_core_days']:.2f}**"])
    return markdown_table(["model", "pre-training", "epochs", "batch / chip", "images seen (M)",
                           "counted train GFLOPs / image (Table 6)", "img/s per chip (p10-p90)",
                           "predicted core-days (band)", "paper core-days", "predicted / paper"], cells)
