"""The performance tables of one version of an NVIDIA DeepLearningExamples README, as published figures.

The markdown is parsed with markdown-it-py (a dependency of rich): each table row keeps its line in the file,
each table the headings above it and the results statement in scope ("Our results were obtained by running
... in the pytorch-21.03 NGC container", which holds until a heading of its own level or higher).

A table is read when it gives throughput or latency: inference tables (per batch size: throughput average,
latency average and percentiles; the 2019 tables' latency and throughput at 50/90/99/100 %) and training tables
(img/s per number of GPUs, or per model in the summary README). Columns that are derived (speedup, scaling,
time to train) and tables of accuracy, time to train, QAT, features or TensorRT latency are not read;
`skipped_tables` says which. "N/A" cells are no figure and are counted, not read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark").enable("table")
GPU = re.compile(r"\b(A100|V100|T4|A40|GV100)\b")
PRECISIONS = (("mixed precision", "AMP"), ("amp", "AMP"), ("tf32", "TF32"), ("fp32", "FP32"), ("fp16", "FP16"))
SKIP_WORDS = ("top1", "top5", "accuracy", "qat", "calibration", "tensorrt", "link", "feature", "weights url",
              "platform", "distillation")


def _clean(cell: str) -> str:
    cell = re.sub(r"<br\s*/?>", " ", cell).replace("*", "")
    return re.sub(r"\s+", " ", cell).strip()


def _precision(text: str) -> str | None:
    low = text.lower()
    return next((p for word, p in PRECISIONS if re.search(rf"(?<![a-z]){word}(?![a-z])", low)), None)


@dataclass
class Table:
    line: int                      # 1-based line of the header row
    header: list[str]
    rows: list[tuple[int, list[str]]]
    headings: list[tuple[int, str, int]]          # (level, text, line) of the headings in force, outermost first
    statement: tuple[int, str] | None             # (line, text) of the results statement in scope


@dataclass
class Parsed:
    figures: list[dict] = field(default_factory=list)
    skipped_tables: list[str] = field(default_factory=list)
    not_available: int = 0         # "N/A" cells in read tables


def tables(text: str) -> list[Table]:
    tokens = _MD.parse(text)
    headings: list[tuple[int, str, int]] = []
    statements: list[tuple[int, tuple[int, str]]] = []     # (level of the heading it sits under, statement)
    found: list[Table] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            headings = [h for h in headings if h[0] < level] + [(level, tokens[i + 1].content.strip(), tok.map[0] + 1)]
            statements = [s for s in statements if s[0] < level]
        elif tok.type == "paragraph_open" and tok.level == 0:
            content = " ".join(tokens[i + 1].content.split())
            if "obtained" in content and "container" in content:
                statements.append((headings[-1][0] if headings else 0, (tok.map[0] + 1, content)))
        elif tok.type == "table_open":
            header, rows, j = [], [], i + 1
            while tokens[j].type != "table_close":
                if tokens[j].type == "tr_open":
                    cells, k = [], j + 1
                    while tokens[k].type != "tr_close":
                        if tokens[k].type == "inline":
                            cells.append(_clean(tokens[k].content))
                        k += 1
                    if header:
                        rows.append((tokens[j].map[0] + 1, cells))
                    else:
                        header = cells
                    j = k
                j += 1
            found.append(Table(tok.map[0] + 1, header, rows, list(headings), statements[-1][1] if statements else None))
            i = j
        i += 1
    return found


def _number(cell: str) -> str | None:
    """The figure as written ('96 img/s' -> '96', '10.37 ms' -> '10.37', '6.91ms' -> '6.91'); None for N/A."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*(img/s|ms)?", cell.strip())
    return m[1] if m else None


def _system(table: Table) -> tuple[str, int]:
    """The nearest heading naming a GPU or a DGX system, and its line ('' and 0 where none does)."""
    for level, text, line in reversed(table.headings):
        if GPU.search(text) or "DGX" in text:
            return text, line
    return "", 0


def _inference_column(name: str, precision_heading: str | None, latency_heading: bool) -> tuple | None:
    """(metric, unit, precision) of an inference table's column, or None for a column not read."""
    low = name.lower()
    if "speedup" in low:
        return None
    if low == "throughput avg":
        return "throughput_avg", "img/s", precision_heading
    m = re.fullmatch(r"latency (avg|\d+)%?", low)
    if m:
        return (f"latency_{'avg' if m[1] == 'avg' else 'p' + m[1]}", "ms", precision_heading)
    m = re.fullmatch(r"(fp32|amp|fp16) @?(\d+)\.0%", low)                 # the 2019 percentile tables
    if m:
        quantity = "latency" if latency_heading else "throughput"
        return f"{quantity}_p{m[2]}", "ms" if latency_heading else "img/s", _precision(m[1])
    if low.endswith("img/s"):                                               # 2019 'mixed precision img/s'
        return "throughput", "img/s", _precision(low)
    return None


def _training_column(name: str) -> tuple | None:
    low = name.lower()
    if any(w in low for w in ("speedup", "scaling", "time", "gpus", "batch", "model", "arch")):
        return None
    precision = _precision(low)
    return ("throughput", "img/s", precision) if precision else None


def _kind(header: list[str]) -> str | None:
    low = [h.lower() for h in header]
    if any(w in h for h in low for w in SKIP_WORDS):
        return None
    if any(h in ("batch size", "batch_size") for h in low):
        return "infer"
    by_gpus = any(h in ("gpus", "# of gpus", "number of gpus") for h in low) or low[0] in ("model", "arch")
    if by_gpus and any(_training_column(h) for h in header):      # not the time-to-train tables
        return "train"
    return None


def _gpus_in_heading(system: str) -> str:
    m = re.search(r"\((\d+)x ", system)
    return m[1] if m else ""


def figures(text: str, default_model: str) -> Parsed:
    """Every read figure of the README text, one dict per table cell."""
    parsed = Parsed()
    for table in tables(text):
        kind = _kind(table.header)
        if kind is None:
            parsed.skipped_tables.append(f"line {table.line}: {' | '.join(table.header)[:80]}")
            continue
        system, system_line = _system(table)
        inner = table.headings[-1][1] if table.headings else ""
        low_header = [h.lower() for h in table.header]
        model_col = next((i for i, h in enumerate(low_header) if h in ("model", "arch", "gpunet")), None)
        batch_col = next((i for i, h in enumerate(low_header) if h in ("batch size", "batch_size", "batch")), None)
        gpus_col = next((i for i, h in enumerate(low_header) if h in ("gpus", "# of gpus", "number of gpus")), None)
        before = len(parsed.figures)
        for line, cells in table.rows:
            for col, name in enumerate(table.header):
                if col >= len(cells) or col in (model_col, batch_col, gpus_col):
                    continue
                what = (_inference_column(name, _precision(inner), "latency" in inner.lower()) if kind == "infer"
                        else _training_column(name))
                if what is None or what[2] is None:
                    continue
                value = _number(cells[col])
                if value is None:
                    if cells[col].strip().upper() == "N/A":
                        parsed.not_available += 1
                        continue
                    raise ValueError(f"line {line}: cannot read {cells[col]!r} in column {name!r}")
                metric, unit, precision = what
                if kind == "train":
                    n_gpus = cells[gpus_col] if gpus_col is not None else _gpus_in_heading(system)
                    n_gpus_source = "table" if gpus_col is not None else "heading"
                else:
                    n_gpus, n_gpus_source = "", ""
                parsed.figures.append({
                    "line": line, "mode": kind, "model": cells[model_col] if model_col is not None else default_model,
                    "batch_size": cells[batch_col] if batch_col is not None else "",
                    "n_gpus": n_gpus, "n_gpus_source": n_gpus_source, "precision": precision, "column": name,
                    "metric": metric, "unit": unit, "value": value, "system": system, "system_line": system_line,
                    "table_heading": inner, "table_line": table.line,
                    "statement": table.statement[1] if table.statement else "",
                    "statement_line": table.statement[0] if table.statement else 0})
        if len(parsed.figures) == before:
            parsed.skipped_tables.append(f"line {table.line}: no figure read: {' | '.join(table.header)[:80]}")
    return parsed
