"""`python -m zoo.compare`: compare backbones side by side (for now: spec and parameter counts)."""
from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.table import Table

from . import create_model, get_spec, list_models
from .spec import ZooError


def parse_models(text: str) -> list[str]:
    names: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            raise ZooError(f"empty model name in {text!r}")
        names += list_models(item) if any(c in item for c in "*?[") else [item]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zoo.compare", description=__doc__)
    parser.add_argument("--models", required=True, help="comma list of registry names or wildcards")
    args = parser.parse_args(argv)
    try:
        specs = [get_spec(n) for n in parse_models(args.models)]
    except ZooError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = Table(title="archzoo")
    for col in ("model", "family", "source", "native", "patch", "tokens", "params (M)"):
        table.add_column(col)
    for spec in specs:
        model = create_model(spec.name, device="meta")
        params = sum(p.numel() for p in model.parameters())
        table.add_row(spec.name, spec.family, spec.source, str(spec.native_size), str(spec.patch_size or "-"),
                      str(spec.tokens() or "-"), f"{params / 1e6:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
