"""Write reports/: one markdown file per table, PNG plots, and index.html with everything."""
from __future__ import annotations

from pathlib import Path

from . import plots, tables
from .html import page
from .rows import load
from .textbook import textbook_table

MARKDOWN_FILES = ("cost.md", "components.md", "attention.md", "scaling.md", "throughput.md", "accuracy.md",
                  "textbook.md")
PLOT_FILES = ("macs_vs_resolution.png", "attention_share_vs_tokens.png", "throughput_vs_resolution.png",
              "components_stacked.png", "accuracy_vs_gmacs.png", "accuracy_vs_throughput.png")


def sections(cost: list[dict], throughput: list[dict]) -> dict[str, tuple[str, str, str]]:
    """file name -> (heading, what it shows, markdown table)."""
    points = tables.accuracy_points(cost, throughput)
    return {
        "cost.md": ("Cost per model and resolution",
                    f"Counted on the meta device at batch 1, fp32. {tables.CONVENTION} Activation peak: live "
                    "tensors during one forward (train: forward + backward), parameters excluded.",
                    tables.cost_table(cost)),
        "components.md": ("MACs per component at 224",
                          "attn_matmul is attention's QK^T + AV; attn_proj the qkv and output projections.",
                          tables.component_table(cost)),
        "attention.md": ("Attention share against tokens",
                         "Share of MACs in attention matmuls; N* = 6d is where one layer's quadratic term "
                         "2N^2 d equals its linear terms 12Nd^2 (MLP ratio 4).", tables.attention_table(cost)),
        "scaling.md": ("Scaling with resolution",
                       "Exponent k of a log-log least-squares fit, quantity ~ side^k (k = 2 is linear in tokens, "
                       "k = 4 quadratic).", tables.scaling_table(cost, throughput)),
        "throughput.md": ("Throughput, latency and MFU (measured)",
                          "Each row names its machine; MFU = 2 x MACs x img/s / measured peak FLOP/s.",
                          tables.throughput_table(throughput)),
        "accuracy.md": ("Reported accuracy beside cost",
                        "Top-1 as each paper reports it (pretraining data differs: compare within a column "
                        "of it); GMACs counted at that resolution; Pareto = no model is both cheaper and "
                        "more accurate.", tables.accuracy_table(points)),
        "textbook.md": ("Textbook check (seed notes, ViT-B/16)",
                        "The seed notes' worked examples, recomputed from results/.", textbook_table(cost)),
    }


def build_reports(results_dir: str | Path = ".", reports_dir: str | Path | None = None,
                  with_plots: bool = True) -> list[Path]:
    cost, throughput = load(results_dir)
    out = Path(reports_dir) if reports_dir else Path(results_dir) / "reports"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    content = sections(cost, throughput)
    for name, (heading, intro, table) in content.items():
        path = out / name
        path.write_text(f"# {heading}\n\n{intro}\n\n{table}", encoding="utf-8")
        written.append(path)
    if with_plots:
        points = tables.accuracy_points(cost, throughput)
        figures = [
            plots.macs_vs_resolution(cost, out / PLOT_FILES[0]),
            plots.attention_share_vs_tokens(cost, out / PLOT_FILES[1]),
            plots.throughput_vs_resolution(throughput, out / PLOT_FILES[2]),
            plots.stacked_components(cost, out / PLOT_FILES[3]),
            plots.accuracy_vs(points, "gmacs", out / PLOT_FILES[4], "GMACs per image (log)"),
            plots.accuracy_vs(points, "imgs_per_s", out / PLOT_FILES[5], "img/s at batch 1 (log)"),
        ]
        (out / "index.html").write_text(page("archzoo report", list(content.values()), figures), encoding="utf-8")
        written += figures + [out / "index.html"]
    return written
