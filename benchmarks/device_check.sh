#!/usr/bin/env bash
# The CUDA path checked on one GPU by one command, in under 8 minutes; the steps live in device_plan.py.
#
# usage: benchmarks/device_check.sh [--plan] [OUTDIR]
#   OUTDIR  where logs, results/, reports/ and summary.md go (default: $OUT when set, else ./device_check_out)
#   --plan  print each step's command, estimated seconds and timeout, and the total; run nothing
# Runs the checkout's own code with the machine's packages (PYTHONPATH = the checkout; nothing installed).
# $PYTHON picks the interpreter (default: python, else python3). A failing step never stops the rest.
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$(command -v python || command -v python3 || true)}"
if [ -z "$python" ]; then
    echo "device_check.sh: no python on PATH (set PYTHON)" >&2
    exit 2
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

plan=0
outdir=""
for arg in "$@"; do
    case "$arg" in
        --plan) plan=1 ;;
        -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "device_check.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
        *)
            if [ -n "$outdir" ]; then echo "device_check.sh: one OUTDIR only" >&2; exit 2; fi
            outdir="$arg" ;;
    esac
done

if [ "$plan" = 1 ]; then
    exec "$python" "$root/benchmarks/device_plan.py" --plan "${outdir:-${OUT:-./device_check_out}}"
fi
exec "$python" "$root/benchmarks/device_plan.py" --run "${outdir:-${OUT:-./device_check_out}}"
