"""Write the published GPU measurements archzoo's prediction may be fitted on, one cited row per figure.

    python benchmarks/extract_sources.py --timm MIRROR --nvidia MIRROR [--out benchmarks/data/sources]

MIRROR is a git directory (a bare mirror, no work tree) of huggingface/pytorch-image-models and of
NVIDIA/DeepLearningExamples; each must hold the pinned commit (source_timm.PIN, source_nvidia.PIN), and every
history walk starts there, so running this again gives the same bytes. It writes, in --out:

- timm_gpu.csv.gz (gzip, no timestamp): every row of every GPU benchmark CSV timm published under results/ (benchmarks/source_timm.py);
- nvidia_dle.csv.gz: every throughput and latency figure of NVIDIA's PyTorch image-classification READMEs, in
  every version of their history (benchmarks/source_nvidia.py);
- extraction_notes.txt: per file and version, what was taken, left out and why.

Every row cites repository, commit, file and line. The files are replaced only once all of them are built: a
failure or an interrupt leaves the old ones. Bad input (a mirror that is not a git directory or lacks the
pinned commit) exits 2 with one line on stderr and writes nothing. A developer tool: archzoo never runs it.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import source_nvidia  # noqa: E402
import source_timm  # noqa: E402
from source_git import Mirror, MirrorError  # noqa: E402

OUT = HERE / "data" / "sources"


def to_csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def build(timm_dir: Path, nvidia_dir: Path) -> dict[str, str]:
    """File name -> text, for every file written. Raises MirrorError on a mirror that cannot be read."""
    timm = Mirror(timm_dir, source_timm.PIN, source_timm.REPO)
    nvidia = Mirror(nvidia_dir, source_nvidia.PIN, source_nvidia.REPO)
    timm.check()
    nvidia.check()
    timm_rows, timm_notes = source_timm.rows(timm)
    nvidia_rows, nvidia_notes = source_nvidia.rows(nvidia)
    notes = [f"# {source_timm.REPO}@{source_timm.PIN}: {len(timm_rows)} rows", *timm_notes, "",
             f"# {source_nvidia.REPO}@{source_nvidia.PIN}: {len(nvidia_rows)} rows", *nvidia_notes]
    return {"timm_gpu.csv.gz": to_csv(timm_rows, source_timm.COLUMNS),
            "nvidia_dle.csv.gz": to_csv(nvidia_rows, source_nvidia.COLUMNS),
            "extraction_notes.txt": "\n".join(notes) + "\n"}


def write_all(files: dict[str, str], out: Path) -> None:
    """Write every file beside its target first, then move them all in place."""
    out.mkdir(parents=True, exist_ok=True)
    staged = []
    try:
        for name, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
            with os.fdopen(fd, "wb") as f:
                data = text.encode("utf-8")
                if name.endswith(".gz"):          # no timestamp: the same rows give the same bytes
                    data = gzip.compress(data, mtime=0)
                f.write(data)
            os.chmod(tmp, 0o644)
            staged.append((tmp, out / name))
        for tmp, target in staged:
            os.replace(tmp, target)
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timm", type=Path, required=True, help="git directory of huggingface/pytorch-image-models")
    parser.add_argument("--nvidia", type=Path, required=True, help="git directory of NVIDIA/DeepLearningExamples")
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"folder written (default {OUT.relative_to(HERE.parent)})")
    args = parser.parse_args(argv)
    try:
        files = build(args.timm, args.nvidia)
    except (MirrorError, ValueError) as e:
        print(f"extract_sources: {e}", file=sys.stderr)
        return 2
    write_all(files, args.out)
    for name, text in files.items():
        print(f"{args.out / name}: {text.count(chr(10)) - (1 if '.csv' in name else 0)} "
              f"{'rows' if '.csv' in name else 'lines'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
