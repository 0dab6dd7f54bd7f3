"""Eager PyTorch vs ONNX Runtime (CPU, fp32) on the same models in one run, interleaved round by round.

Each round measures eager then ORT (ORT then eager on odd rounds) with the same protocol and threads,
so slow drifts in machine load hit both alike. NB: a core busy with another process does not: it
slows multi-threaded eager (OpenMP) several times more than ORT. So the table gives medians over
the quiet rounds (both measurements under QUIET_SHARE foreign CPU; all rounds when none was) and,
for reference, the all-rounds ratio.
Measures, asserts nothing. Each ORT measurement exports the model afresh (export time is reported).

Run: python benchmarks/onnx_vs_eager.py [--models vit_b16 swin_t convnext_t] [--rounds 3] [--quick]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

import torch  # noqa: E402

import zoo  # noqa: E402
from analysis.timing.contention import wait_for_quiet  # noqa: E402
from analysis.timing.fingerprint import available_cores, cpu_model_name  # noqa: E402
from analysis.size import Size  # noqa: E402
from analysis.timing.backends import EagerBackend, TimingSetting  # noqa: E402
from analysis.timing.harness import time_model  # noqa: E402
from analysis.timing.latency import QUICK_PROTOCOL, TimingProtocol  # noqa: E402
from analysis.timing.onnx_runtime import DEFAULT_OPSET, OnnxRuntimeBackend  # noqa: E402

MODELS = ("vit_b16", "swin_t", "convnext_t")
SHORT_PROTOCOL = TimingProtocol(warmup=2, min_iters=5, min_seconds=1.0)
QUIET_SHARE = 0.15  # a round counts as quiet when both measurements saw at most this foreign CPU share
                    # (zoo.runs.tasks.NOISY_FOREIGN_CPU_SHARE)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, spec=".1f"):
    return "–" if value is None else format(value, spec)


def _ratio(value):
    return "–" if value is None else f"{value:.2f}x"


def compare_model(name: str, img_size: int, rounds: int, protocol: TimingProtocol, threads: int,
                  exporter: str, quiet_timeout_s: float = 0.0) -> dict:
    """Interleaved rounds of one model; medians over the quiet rounds (all rounds when none was quiet)."""
    model = zoo.create_model(name, img_size=img_size)
    pairs, failure = [], None  # (eager record, ORT record or None) per round
    for round_index in range(rounds):
        if quiet_timeout_s > 0:
            wait_for_quiet(timeout_s=quiet_timeout_s)  # NB: gives up after the timeout; foreign shares say how busy
        eager = onnx = None
        for backend in ("eager", "ort") if round_index % 2 == 0 else ("ort", "eager"):
            if backend == "eager":
                eager = time_model(model, EagerBackend(), Size.of(img_size), 1, TimingSetting(threads=threads),
                                   protocol).as_fields()
            elif failure is None:
                try:
                    onnx = time_model(model, OnnxRuntimeBackend(exporter=exporter), Size.of(img_size), 1,
                                      TimingSetting(threads=threads), protocol).as_fields()
                except Exception as exc:  # noqa: BLE001 -- a failed export is a finding, not a crash
                    failure = f"{type(exc).__name__}: {exc}"
        pairs.append((eager, onnx))
        print(f"  {name} round {round_index + 1}/{rounds}: eager {_fmt(eager['imgs_per_s'], '.2f')} img/s "
              f"(foreign {_fmt(eager['foreign_cpu_share'], '.2f')}), ort {_fmt(onnx and onnx['imgs_per_s'], '.2f')} "
              f"img/s (foreign {_fmt(onnx and onnx['foreign_cpu_share'], '.2f')})", file=sys.stderr, flush=True)
    quiet = [(e, o) for e, o in pairs if all(r is None or (r["foreign_cpu_share"] or 0) <= QUIET_SHARE for r in (e, o))]
    used = quiet or pairs
    eager_used = [e for e, _ in used]
    onnx_used = [o for _, o in used if o is not None]
    onnx_all = [o for _, o in pairs if o is not None]
    shares = [r["foreign_cpu_share"] for pair in pairs for r in pair if r is not None and r["foreign_cpu_share"] is not None]
    return {
        "model": name,
        "rounds_quiet": len(quiet),
        "rounds": len(pairs),
        "eager_imgs_per_s": _median(r["imgs_per_s"] for r in eager_used),
        "ort_imgs_per_s": _median(r["imgs_per_s"] for r in onnx_used),
        "ratio": _median(o["imgs_per_s"] / e["imgs_per_s"] for e, o in used if o is not None),
        "ratio_all_rounds": _median(o["imgs_per_s"] / e["imgs_per_s"] for e, o in pairs if o is not None),
        "eager_p50_ms": _median(r["latency_ms_p50"] for r in eager_used),
        "ort_p50_ms": _median(r["latency_ms_p50"] for r in onnx_used),
        "max_abs_diff": max((r["onnx_max_abs_diff"] for r in onnx_all if r["onnx_max_abs_diff"] is not None),
                            default=None),
        "matches": all(r["onnx_matches_eager"] for r in onnx_all) if onnx_all else None,
        "export_s": _median(r["export_seconds"] for r in onnx_all),
        "foreign_max": max(shares, default=None),
        "foreign_median": _median(shares),
        "failure": failure,
    }


def markdown(rows: list[dict]) -> str:
    lines = [f"| model | quiet rounds | eager img/s | ORT img/s | ORT / eager | eager p50 ms | ORT p50 ms "
             f"| ORT matches eager (max abs diff) | export s | foreign CPU share (median / max) "
             f"| ORT / eager, all rounds |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        if r["failure"] and r["ort_imgs_per_s"] is None:
            ort_cells = f"failed: {r['failure']} | – | {_fmt(r['eager_p50_ms'])} | – | – | –"
        else:
            ort_cells = (f"{_fmt(r['ort_imgs_per_s'], '.2f')} | {_ratio(r['ratio'])} | "
                         f"{_fmt(r['eager_p50_ms'])} | {_fmt(r['ort_p50_ms'])} | "
                         f"{r['matches']} ({_fmt(r['max_abs_diff'], '.1e')}) | {_fmt(r['export_s'])}")
        lines.append(f"| {r['model']} | {r['rounds_quiet']}/{r['rounds']} | {_fmt(r['eager_imgs_per_s'], '.2f')} | "
                     f"{ort_cells} | {_fmt(r['foreign_median'], '.3f')} / {_fmt(r['foreign_max'], '.3f')} | "
                     f"{_ratio(r['ratio_all_rounds'])} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="default: every available core")
    parser.add_argument("--quick", action="store_true", help="QUICK_PROTOCOL instead of the short one")
    parser.add_argument("--exporter", default="dynamo", choices=("dynamo", "torchscript"))
    parser.add_argument("--quiet-timeout", type=float, default=30.0,
                        help="before each round wait up to this many seconds for other processes to go quiet")
    args = parser.parse_args(argv)
    import onnxruntime

    protocol = QUICK_PROTOCOL if args.quick else SHORT_PROTOCOL
    threads = args.threads or available_cores()
    start = time.perf_counter()
    rows = [compare_model(name, args.img_size, args.rounds, protocol, threads, args.exporter, args.quiet_timeout)
            for name in args.models]
    print(f"\nEager PyTorch vs ONNX Runtime, {args.img_size} px, batch 1, fp32, {threads} threads, "
          f"{args.rounds} interleaved rounds, protocol warmup={protocol.warmup} min_iters={protocol.min_iters} "
          f"min_seconds={protocol.min_seconds}; {cpu_model_name()}; torch {torch.__version__}, "
          f"onnxruntime {onnxruntime.__version__} (CPUExecutionProvider), {args.exporter} exporter, "
          f"opset {DEFAULT_OPSET}; {time.perf_counter() - start:.0f} s in all.\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
