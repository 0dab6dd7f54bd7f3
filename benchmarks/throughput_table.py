"""Throughput / latency / MFU table for the five reference models on this machine.

Measures vit_b16, swin_t, convnext_t, deit_s and resnet50 at 224, batch 1 and 16, fp32 and bf16
(autocast), all cores, with per-image MACs from the cost analysis (analysis.cost) for MFU. Records
go to a JSON-lines file under results/; the table is then rendered from that file only (reports
are built from results/, never by the code that measures). Short settings keep the whole run
under ~10 minutes on a 2-core CPU.

Run: python benchmarks/throughput_table.py [--out results/throughput_table.jsonl] [--render-only]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

MODELS = ("vit_b16", "swin_t", "convnext_t", "deit_s", "resnet50")
BATCH_SIZES = (1, 16)
DTYPES = ("fp32", "bf16")
IMG_SIZE = 224
SHORT_PROTOCOL = dict(warmup=2, min_iters=5, min_seconds=2.0)


def macs_per_image(models, img_size: int) -> dict:
    """Forward MACs for one image, counted on the meta device by analysis.cost (no arithmetic)."""
    from analysis.cost import cost_record

    return {name: cost_record(name, img_size=img_size, batch_size=1, train=False)["macs"] for name in models}


def measure(out_path: Path, isolate: bool, device: str, quiet_timeout_s: float) -> None:
    """One sweep; the peak per dtype is probed at its first use and again at the end, best kept.

    NB: on a shared machine a busy moment lowers a peak probe and inflates MFU, hence the re-probe
    (analysis.timing.apply_best_peak) and the probe's foreign-CPU share printed below.
    """
    from analysis.fingerprint import available_cores
    from analysis.peak import measure_peak_flops
    from analysis.timing import resolve_device, sweep_throughput

    torch_device, threads = str(resolve_device(device)), available_cores()
    records = sweep_throughput(MODELS, img_sizes=(IMG_SIZE,), batch_sizes=BATCH_SIZES, dtypes=DTYPES,
                               macs_per_model=macs_per_image(MODELS, IMG_SIZE), isolate=isolate,
                               device=torch_device, threads=threads, quiet_timeout_s=quiet_timeout_s,
                               **SHORT_PROTOCOL)
    for dtype in DTYPES:
        peak = measure_peak_flops(torch_device, dtype, threads)
        print(f"{dtype} peak {peak['peak_flops'] / 1e9:.0f} GFLOP/s ({peak['peak_kernel']}); others' CPU during "
              f"the last probe: {peak['peak_foreign_cpu_share']}", file=sys.stderr)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


def _format(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render(out_path: Path, console: Console) -> None:
    records = [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    first = records[0]
    table = Table(title=f"{first['cpu_model']} ({first['cpu_cores_available']} cores), torch {first['torch_version']}, "
                        f"timm {first['timm_version']}, {IMG_SIZE}px, inference")
    for header in ("model", "dtype", "batch", "imgs/s", "p50 ms", "p90 ms", "p99 ms", "cv", "iters",
                   "GMACs/img", "peak GFLOP/s", "MFU", "attention", "others' CPU", "error"):
        table.add_column(header, justify="left" if header in ("model", "dtype", "attention", "error") else "right")
    for record in records:
        table.add_row(
            record["model"], record["dtype"], f"{record['batch_size']}/{record['requested_batch_size']}",
            _format(record["imgs_per_s"], ".2f"), _format(record["latency_ms_p50"], ".1f"),
            _format(record["latency_ms_p90"], ".1f"), _format(record["latency_ms_p99"], ".1f"),
            _format(record["cv"], ".3f"), str(record.get("iters")), _format(record["macs"] and record["macs"] / 1e9, ".3f"),
            _format(record["peak_flops"] and record["peak_flops"] / 1e9, ".0f"), _format(record["mfu"], ".1%"),
            record.get("attention_path", "-"), _format(record.get("foreign_cpu_share"), ".0%"), record["error"] or "")
    console.print(table)
    console.print(f"threads={first['threads']}; peak = best of torch.mm and oneDNN 3x3 conv probes per dtype "
                  f"(analysis/peak.py); MFU = 2 x MACs x imgs/s / peak; batch shows ran/requested; others' CPU = "
                  f"share of the machine's CPU other processes used during the measurement.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "throughput_table.jsonl")
    parser.add_argument("--render-only", action="store_true", help="only print the table from --out")
    parser.add_argument("--isolate", action="store_true", help="each measurement in a fresh subprocess")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--quiet-timeout", type=float, default=10.0,
                        help="seconds to wait for an idle machine before each measurement (0: do not wait)")
    args = parser.parse_args(argv)
    if not args.render_only:
        measure(args.out, args.isolate, args.device, args.quiet_timeout)
    render(args.out, Console(width=200))
    return 0


if __name__ == "__main__":
    sys.exit(main())
