"""zoo.select's answer as text: the shortlist table (markdown or plain), the Pareto fronts, the undecided
models and every exclusion with its reason; a --predict answer's table. Reads the answer's dict only: zoo.select
prints it and zoo.report renders the stored ones."""
from __future__ import annotations

import os

from ..console.markdown import feature_maps, markdown_inline, markdown_table


def num(value: float) -> str:
    """Three significant figures or so: 243, 47.2, 5.79, 0.012."""
    a = abs(value)
    return f"{value:,.0f}" if a >= 100 else f"{value:.1f}" if a >= 10 else f"{value:.2f}" if a >= 0.1 else f"{value:.3g}"


def size_text(size) -> str:
    return str(size) if isinstance(size, int) else "x".join(str(s) for s in size)


def _opt(value, fmt=num):
    return None if value is None else fmt(value)


def _columns(result: dict) -> list[tuple]:
    """(header, cell of a row) for the columns this answer has."""
    rows, query = result["shortlist"], result["query"]
    cols = [("model", lambda r: r["model"] + (" *" if r["pareto"] else "")),
            ("res", lambda r: size_text(r["img_size"])), ("batch", lambda r: r["batch_size"]),
            ("params (M)", lambda r: num(r["params_m"])), ("GMACs", lambda r: num(r["gmacs"]))]
    if query.get("features"):
        cols.append(("feature maps [C,H,W]", lambda r: feature_maps(r.get("features"))))
    if query.get("segmenter"):
        cols += [("ADE20K mIoU", lambda r: _opt(r.get("miou"), lambda v: f"{v:g}")),
                 ("mIoU ms+flip", lambda r: _opt(r.get("miou_ms"), lambda v: f"{v:g}")),
                 ("mIoU published for", lambda r: r.get("miou_recipe")),
                 ("mIoU pretraining", lambda r: r.get("miou_pretraining"))]
    if query.get("detector"):
        cols.insert(1, ("detector", lambda r: r.get("detector")))
    cols += [("act (MiB)", lambda r: num(r["act_mib"])), ("serve (MiB)", lambda r: num(r["serve_mib"]))]
    if query.get("train"):
        cols += [("train GMACs", lambda r: _opt(r.get("train_gmacs"))),
                 ("train (MiB)", lambda r: _opt(r.get("train_mib")))]
    if any("latency_ms_p50" in r for r in rows):
        cols += [("p50 (ms)", lambda r: _opt(r.get("latency_ms_p50"))),
                 ("p99 (ms)", lambda r: _opt(r.get("latency_ms_p99"))),
                 ("img/s", lambda r: _opt(r.get("imgs_per_s"))),
                 ("backend", lambda r: r.get("backend")),
                 ("noisy", lambda r: f"noisy (cv {r['cv']:.2f})" if r.get("noisy") else "")]
    if query.get("detector"):
        cols += [("box AP", lambda r: _opt(r.get("box_ap"), lambda v: f"{v:.1f}")),
                 ("mask AP", lambda r: _opt(r.get("mask_ap"), lambda v: f"{v:.1f}")),
                 ("AP of (schedule, pretraining)", lambda r: r.get("ap_recipe") or (
                     "no published row of these heads" if r.get("task_unmatched") else None))]
    cols += [("top-1 @res (source)", lambda r: None if r["top1"] is None else
              f"{r['top1']:g} @{size_text(r['top1_resolution'])} ({r['top1_source'].partition(':')[0]})"),
             ("weights", lambda r: r.get("weights_label")),
             ("pretraining", lambda r: r["pretraining"]),
             ("IN-V2", lambda r: _opt(r["imagenet_v2"], lambda v: f"{v:g}")),
             ("Sketch", lambda r: _opt(r["sketch"], lambda v: f"{v:g}"))]
    return cols


LEFT = ("model", "detector", "top-1 @res (source)", "weights", "pretraining", "backend", "feature maps [C,H,W]",
        "AP of (schedule, pretraining)")


UNBOUNDED_WIDTH = 100_000      # characters: rich lays a table out at its own width when given this much


def _plain(headers: list[str], rows: list[list]) -> str:
    from rich.console import Console
    from rich.table import Table

    grid = Table(show_edge=False, pad_edge=False)
    for h in headers:
        grid.add_column(h, justify="left" if h in LEFT else "right")
    for r in rows:
        grid.add_row(*("-" if c is None else str(c) for c in r))
    with open(os.devnull, "w") as sink:
        # as wide as the table needs: a cell is never cut to "n…" (the noisy column was, issue 54); text, not a screen
        console = Console(width=UNBOUNDED_WIDTH, record=True, file=sink)
        console.print(grid)
    return "\n".join(line.rstrip() for line in console.export_text().rstrip("\n").splitlines())


def title(result: dict) -> str:
    query, axes = result["query"], result["query"]["pareto_axes"]
    what = f" {query['detector']} detectors" if query.get("detector") else \
        f" {query['segmenter']} segmenters" if query.get("segmenter") else \
        " feature extractors" if query.get("features") else ""
    padded = f" (padded from {query['padded_from']})" if query.get("padded_from") else ""
    text = (f"shortlist{what} at {size_text(query['resolution'])} px{padded}, ranked by {query['rank']}: "
            f"{len(result['shortlist'])} of {len(query['models'])} (* on the Pareto front of {axes['y']} vs "
            f"{axes['x']} in its pretraining group)")
    text += f"\nNB: {query['rank_note']}" if query.get("rank_note") else ""
    return text + (f"\nNB: {result['note']}" if result.get("note") else "")


def _timing_head(result: dict) -> list[str]:
    """A measured answer's first lines: partial or not, what was timed, and whose machine it answers for."""
    timing = result.get("timing")
    if not timing:
        return []
    partial = timing.get("partial")
    unsettled = (partial or {}).get("unsettled", "untimed")
    head = [f"PARTIAL ANSWER: {partial['reason']}; the {unsettled} models below are not settled"] if partial else []
    head.append(f"timed {timing['timed']} (reused {timing['reused']} stored rows), screened out before timing "
                f"(size, accuracy, counts) {timing['screened_out']}, bounded out {timing['bounded_out']}, "
                f"untimed {len(result['untimed'])}, "
                f"in {timing['elapsed_s']:.0f} s of a {timing['budget_s']:g} s budget")
    head += ["measured latency answers for the machine that timed it only (--save-plan / --from-plan: "
             "docs/select.md)", ""]
    return head


def render(result: dict, fmt: str) -> str:
    """The selection as markdown, or as a plain-text table (JSON is json.dumps of `result`); a --predict answer
    as zoo.select --predict prints it (predicted_text)."""
    if result.get("predicted") is True:
        return predicted_text(result["shortlist"], result["excluded"], result["query"]["rank"])
    columns = _columns(result)
    headers = [h for h, _ in columns]
    rows = [[cell(r) for _, cell in columns] for r in result["shortlist"]]
    table = markdown_table(headers, rows).rstrip("\n") if fmt == "markdown" else _plain(headers, rows)
    text = markdown_inline if fmt == "markdown" else str      # reasons may come from a plan file: text, never markup
    lines = [*_timing_head(result), title(result), "", table, "", "Pareto front per pretraining group:"]
    y = result["query"]["pareto_axes"]["y"]
    none = f"- (none: no candidate has {y})" if result["shortlist"] and not any(
        r.get(y) is not None for r in result["shortlist"]) else "- (none)"
    lines += [f"- {group}: {', '.join(models)}" for group, models in result["pareto"].items()] or [none]
    decided = [r for r in result["shortlist"] if r.get("decision")]
    if decided:
        lines += ["", "decided (fits):"]
        lines += [text(f"- {r['model']}: {r['decision']}" + (f"; {r['vs_next']}" if r.get("vs_next") else "")
                       + (f"; {r['unranked']}" if r.get("unranked") else "")) for r in decided]
    if result.get("undecided"):
        lines += ["", f"undecided ({len(result['undecided'])}):"]
        lines += [text(f"- {u['model']}: {u['reason']}") for u in result["undecided"]]
    if result.get("untimed"):
        lines += ["", f"untimed ({len(result['untimed'])}):"]
        lines += [text(f"- {u['model']}: {u['reason']}") for u in result["untimed"]]
    lines += ["", f"excluded ({len(result['excluded'])}):"]
    lines += [text(f"- {e['model']}: {e['reason']}") for e in result["excluded"]] or ["- (none)"]
    return "\n".join(lines) + "\n"


def predicted_text(kept: list[dict], excluded: list[dict], rank: str) -> str:
    """A --predict answer: the predicted rows that meet the budget, their published top-1, and each exclusion."""
    from ..predict.text import predicted_markdown

    lines = [f"ranked by predicted {rank}" if rank != "top1" else "ranked by published top-1", ""]
    lines.append(predicted_markdown(kept) if kept else "PREDICTED: no model meets the constraints\n")
    if kept:
        lines += ["top-1 (published, ImageNet-1k, timm's evaluation): "
                  + ", ".join(f"{r['model']} {r['top1']:.1f}" for r in kept if r["top1"] is not None), ""]
    lines += [f"excluded: {r['model']}: {r['excluded']}" for r in excluded]
    return "\n".join(lines) + "\n"
