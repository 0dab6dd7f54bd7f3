"""Throughput / latency / MFU table for the five reference models on this machine.

Measures vit_b16, swin_t, convnext_t, deit_s and resnet50 at 224, batch 1 and 16, fp32 and bf16
(autocast), all cores, through `zoo.compare` itself (the same tasks, defaults, peak cache and rows
as every other measurement; `--executor subprocess` gives each model a fresh process), into
<out>/results/, then prints the table `zoo.report` builds from those rows.

Run: python benchmarks/throughput_table.py [--out DIR (default: a scratch folder)] [--executor local]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

MODELS = "vit_b16,swin_t,convnext_t,deit_s,resnet50"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for results/ (default: a scratch folder)")
    parser.add_argument("--executor", default="subprocess", help="subprocess (default) or local")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    from zoo.compare.cli import main as compare
    from zoo.report.rows import load
    from zoo.report.tables import throughput_table

    out = args.out or Path(tempfile.mkdtemp(prefix="throughput_table"))
    for dtype in ("fp32", "bf16"):
        status = compare(["--models", MODELS, "--resolutions", "224", "--batch-sizes", "1,16", "--metrics",
                          "throughput", "--dtype", dtype, "--device", args.device, "--executor", args.executor,
                          "--out", str(out), "--format", "csv"])
        if status not in (0, 1):
            return status
    print(throughput_table(load(out).throughput))
    print(f"rows in {out / 'results'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
