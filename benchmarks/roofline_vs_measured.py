"""Roofline estimate and MACs-only estimate against measured latency, on this machine.

Times 20 registry models at 224 and 384 px, batch 1 and 8, fp32 eager inference, through `zoo.compare`
itself (same tasks, timing protocol, GEMM-peak and bandwidth cache, rows; each timed row carries its
roofline_ms from this machine's measured peak and triad bandwidth), one resolution after the other,
resuming what <out>/results/ already holds. Then compares measured p50 latency with (a) the roofline
and (b) latency = k x MACs x batch fitted on the same rows (zoo/report/roofline.py): Spearman rank
correlation, and the median, p10, p90 and spread of predicted / measured; writes roofline.md and
roofline_vs_measured.png into <out> and prints the table.

Run: python benchmarks/roofline_vs_measured.py [--out DIR] [--quick] [--device cpu|cuda] [--models a,b]
     [--analyze-only [--assume-bandwidth GB/s]]
--assume-bandwidth estimates rows timed before rows carried a roofline (older results/) from their own
GEMM peak and the bandwidth given (say which, and why, when quoting it).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

MODELS = ("vit_ti16,deit_ti,deit_ti_distilled,vit_s16,deit_s,deit_s_distilled,vit_b32,resnet50,bit_r50x1,swin_t,"
          "convnext_t,bit_r101x1,swin_s,convnext_s,vit_l32,regnety_160,vit_b16,deit_b,swin_b,convnext_b")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for results/ (default: a scratch folder)")
    parser.add_argument("--models", default=MODELS, help="comma list (default: 20 registry models)")
    parser.add_argument("--resolutions", default="224,384")
    parser.add_argument("--batch-sizes", default="1,8")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--quick", action="store_true", help="zoo.compare --quick (short timing runs)")
    parser.add_argument("--analyze-only", action="store_true", help="time nothing: compare the rows in --out")
    parser.add_argument("--report-dir", type=Path, default=None, help="where roofline.md and the plot go (--out)")
    parser.add_argument("--assume-bandwidth", type=float, default=None,
                        help="GB/s for timed CPU fp32 inference rows without roofline_ms (their own peak_flops)")
    args = parser.parse_args(argv)
    from zoo.compare.cli import main as compare
    from zoo.report import roofline
    from zoo.report.rows import load

    out = args.out or Path(tempfile.mkdtemp(prefix="roofline_vs_measured"))
    if not args.analyze_only:
        for size in args.resolutions.split(","):   # every model at one size before the next: partial runs compare
            status = compare(["--models", args.models, "--resolutions", size, "--batch-sizes", args.batch_sizes,
                              "--metrics", "throughput", "--device", args.device, "--out", str(out), "--resume",
                              "--format", "csv", *(["--quick"] if args.quick else [])])
            if status not in (0, 1):
                return status
    wanted = set(args.models.split(","))
    rows = [r for r in load(out).throughput if r["model"] in wanted]
    if args.assume_bandwidth:
        rows = [with_roofline(r, args.assume_bandwidth * 1e9) for r in rows]
    df = roofline.frame(rows)
    table = roofline.table(df) if len(df) else roofline.NO_ROWS
    report_dir = args.report_dir or out
    report_dir.mkdir(parents=True, exist_ok=True)
    roofline.plot(df, report_dir / "roofline_vs_measured.png")
    (report_dir / "roofline.md").write_text(table, encoding="utf-8")
    print(table)
    print(f"rows in {out / 'results'}; table and plot in {report_dir}", file=sys.stderr)
    return 0


def with_roofline(row: dict, bandwidth: float) -> dict:
    """A timed CPU fp32 eager inference row without a roofline gets one from its peak and `bandwidth`."""
    from analysis.predict.roofline import ROOFLINE_FIELDS, roofline
    from zoo.predict.inference import gpu_forward
    from zoo.runs.request import Request

    s = row["settings"]
    if row.get("roofline_ms") or not row.get("peak_flops") or s.get("train") or s["dtype"] != "fp32" or \
            s.get("backend", "eager") != "eager" or row.get("device") != "cpu":
        return row
    batch = row.get("ran_batch_size") or row["batch_size"]
    ops = gpu_forward(Request(row["model"], row["img_size"], batch), gpu=False)["ops"]
    estimate = roofline(ops, row["peak_flops"], bandwidth)
    return {**row, "mem_bandwidth": bandwidth, **{k: estimate[k] for k in ROOFLINE_FIELDS}}


if __name__ == "__main__":
    sys.exit(main())
