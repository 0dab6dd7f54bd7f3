"""The one markdown-table renderer, for the printed comparison and every report table, and the one formatter
of each unit their cells show: memory in MiB, MFU, feature maps, plain significant figures, the machine a row
ran on."""
from __future__ import annotations

import math

MIB = 2 ** 20


def markdown_text(value) -> str:
    """One line of text as markdown shows it, never runs it: "&", "<" and ">" as HTML entities (a row's text,
    a cpu_model of "<script>", reaches a markdown viewer as text), line breaks as spaces."""
    text = " ".join(str(value).splitlines())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_inline(value) -> str:
    """Free text on one markdown line (a list item, a heading), never markup: line breaks as spaces, "&" and "<"
    as entities (no HTML tag or entity can start without them); ">" stays, as in "15.4 GMACs > 5"."""
    text = " ".join(str(value).splitlines())
    return text.replace("&", "&amp;").replace("<", "&lt;")


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """None shows as "-"; each cell is markdown_text, and a "|" inside it is escaped so it cannot split the row."""
    def cell(value) -> str:
        return "-" if value is None else markdown_text(value).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def plain(value: float, digits: int = 4) -> str:
    """`digits` significant figures without scientific notation, thousands separated, trailing zeros dropped
    as %g drops them: 15,590, 4.479, 0.0123, 800, 30,100,000."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")
    text = f"{rounded:,.{max(digits - 1 - math.floor(math.log10(abs(rounded))), 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text     # as %g: 800, not 800.0


def mib(nbytes: float | None) -> str | None:
    """Bytes as MiB (2^20 bytes), one decimal, thousands separated: 1,234.5; None stays None."""
    return None if nbytes is None else f"{nbytes / MIB:,.1f}"


def mfu_cell(row: dict, prefix: str = "", digits: int = 1, unit: str = "") -> str | None:
    """A row's MFU (its `prefix`mfu: "train_" for a training step's) as a percentage with `digits` decimals and
    `unit` after it, "(above peak)" past the GEMM probe; "no fast GEMM" for a dtype without one (no MFU given);
    None without an MFU."""
    mfu = row.get(f"{prefix}mfu")
    if mfu is None:
        return "no fast GEMM" if row.get(f"{prefix}peak_fast_gemm") is False else None
    return f"{100 * mfu:.{digits}f}{unit}{' (above peak)' if row.get(f'{prefix}mfu_above_peak') else ''}"


def feature_maps(maps: list | None, img_h: int | None = None) -> str | None:
    """A feature extractor's maps as [C,H,W] each; given the input's height, each map's stride after it
    ([96,56,56]/4); None without maps."""
    if not maps:
        return None
    return " ".join(f"[{c},{h},{w}]" + ("" if img_h is None else f"/{img_h // h if h else '?'}") for c, h, w in maps)


def machine_name(row: dict) -> str:
    """The machine a timed row ran on, as every table names it: "GPU / CPU model (N threads)", or the CPU alone."""
    env = row.get("env") or {}
    gpu = env.get("gpu_name")
    cpu = f"{env.get('cpu_model') or '?'} ({row.get('threads') or '?'} threads)"
    return f"{gpu} / {cpu}" if gpu else cpu
