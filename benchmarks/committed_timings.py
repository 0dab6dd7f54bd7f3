"""The timed rows behind the committed report: how `results/throughput.jsonl` of this repository is made.

Three `zoo.compare` runs on this machine, fp32, all cores, 224 px, the full timing protocol (docs/timing.md):
1. eager PyTorch, 20 registry models, batch 8 (a serving batch), and batch 1 for those not in step 2;
2. eager and ONNX Runtime side by side (interleaved per model, `--backend eager,onnxruntime`), 10 models, batch 1;
3. whole detectors and feature extractors at detection sizes are counted, not timed (`zoo.report --refresh`).
Each timed eager inference row carries its roofline estimate from this machine's measured GEMM peak and memory
bandwidth. Rows name the machine (`env.cpu_model`) and whether others' CPU made them noisy; run it on an idle
machine (`uptime` near 0) or the report marks them.

Run (maintainers, in a checkout): python benchmarks/committed_timings.py --out .   (about 10 min on 2 cores)
then: python -m zoo.report --results .
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

SIDE_BY_SIDE = ["vit_ti16", "vit_s16", "vit_b16", "deit_ti", "deit_s", "deit_b", "swin_t", "convnext_t",
                "resnet50", "bit_r50x1"]
EAGER_ONLY = ["vit_b32", "deit_ti_distilled", "deit_s_distilled", "deit_b_distilled", "swin_s", "convnext_s",
              "regnety_160", "beit_b16", "eva02_b14", "vit_l32"]
SERVING_BATCH = 8


def runs(models: list[str] | None = None) -> list[list[str]]:
    """The zoo.compare argument lists, in order (`models` narrows them, for a quick try)."""
    def keep(names):
        return [n for n in names if models is None or n in models]

    common = ["--resolutions", "224", "--metrics", "throughput", "--dtype", "fp32", "--format", "csv"]
    plan = [["--models", ",".join(keep(SIDE_BY_SIDE + EAGER_ONLY)), "--batch-sizes", str(SERVING_BATCH)],
            ["--models", ",".join(keep(EAGER_ONLY)), "--batch-sizes", "1"],
            ["--models", ",".join(keep(SIDE_BY_SIDE)), "--batch-sizes", "1", "--backend", "eager,onnxruntime"]]
    return [args + common for args in plan if args[1]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for results/ (default: a scratch folder; "
                                                               "--out . for the repository's own)")
    parser.add_argument("--models", help="comma list: only these of the planned models (a quick try)")
    parser.add_argument("--quick", action="store_true", help="zoo.compare --quick (not for committed rows)")
    args = parser.parse_args(argv)
    from zoo.compare.cli import main as compare

    out = args.out or Path(tempfile.mkdtemp(prefix="committed_timings"))
    worst = 0
    for run in runs(args.models.split(",") if args.models else None):
        with contextlib.redirect_stdout(io.StringIO()):      # the rows are the product here, not the tables
            status = compare([*run, "--out", str(out), *(["--quick"] if args.quick else [])])
        if status not in (0, 1):
            return status
        worst = max(worst, status)
    print(f"rows in {out / 'results'}; `python -m zoo.report --results {out}` builds the report", file=sys.stderr)
    return worst


if __name__ == "__main__":
    sys.exit(main())
