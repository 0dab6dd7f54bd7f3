"""Write reports/: one markdown file per table, PNG plots with the data behind them (plots.json),
and index.html with everything. Built from results/ alone; any subset of rows, or none, gives a
report, and the page says what it left out and why."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..markdown import markdown_text
from ..runs.safe_io import strict_dumps, write_atomic
from . import plots, roofline, style, tables
from .accuracy import accuracy_points, accuracy_table
from .choosing import choosing_markdown
from .detection import detection_table
from .detectors import detector_notes, detector_table
from .html import page
from .rows import ReportRows, load
from .textbook import textbook_table

MARKDOWN_FILES = ("cost.md", "components.md", "attention.md", "scaling.md", "throughput.md", "detection.md",
                  "accuracy.md", "textbook.md", "detectors.md", "not_measured.md", "choosing.md", "roofline.md")
PLOT_FILES = ("macs_vs_resolution.png", "attention_share_vs_tokens.png", "throughput_vs_resolution.png",
              "component_shares.png", "accuracy_vs_gmacs.png", "accuracy_vs_throughput.png",
              "roofline_vs_measured.png")
PLOT_DATA_FILE = "plots.json"
STYLE_KEY = "style"            # in plots.json, beside each plot's data
HTML_FILE = "index.html"
REPORT_FILES = (*MARKDOWN_FILES, *PLOT_FILES, PLOT_DATA_FILE, HTML_FILE)   # each written whole, renamed into place


@dataclass
class Section:
    heading: str
    intro: str
    table: str
    notes: list[str] = field(default_factory=list)      # what was left out, and why

    def markdown(self) -> str:
        notes = "".join(f"\nNB: {markdown_text(n)}\n" for n in self.notes)     # notes name rows' machines
        return f"# {self.heading}\n\n{self.intro}\n{notes}\n{self.table}"


@dataclass
class TextSection:
    """A section that is its own markdown (no single table): the page shows it as preformatted text."""
    heading: str
    intro: str
    text: str
    notes = ()                       # it says what it left out in its own text

    def markdown(self) -> str:
        return f"# {self.heading}\n\n{self.intro}\n\n{self.text}"


ACCURACY_POLICY = {  # what each --weights column is
    "default": "default: timm's own evaluation (one pipeline, results-imagenet.csv at aa4b585) of the checkpoint "
               "timm.create_model(arch, pretrained=True) loads for that size: timm's default tag when evaluated "
               "there, else the first tag in timm's pretrained order evaluated there.",
    "paper": "paper: the authors' checkpoint as their paper or repository reports it (source column; 'not in "
             "timm' where timm does not ship those weights).",
    "best": "best: timm's most accurate evaluated checkpoint at that size.",
}


def _unless_empty(rows: list, what: str) -> list[str]:
    return [] if rows else [f"no {what} in results/"]


def sections(data: ReportRows, weights: str = "default", pretraining=None) -> dict[str, Section | TextSection]:
    cost, throughput = data.square_cost, data.throughput
    rooflined = roofline.frame(throughput)
    points, accuracy_notes = accuracy_points(cost, throughput, weights, pretraining)
    size = tables.components_size(cost)
    attention, attention_notes = tables.attention_table(cost)
    scaling, scaling_notes = tables.scaling_table(cost, throughput)
    other_batches = sorted({f"batch {r['batch_size']} {r['settings']['dtype']}" for r in data.cost_all} -
                           {"batch 1 fp32"})
    cost_notes = _unless_empty(data.cost, "batch-1 fp32 cost rows") + (
        [f"cost rows at {', '.join(other_batches)} are in results/ but this table shows batch 1, fp32"]
        if other_batches else [])
    return {
        "cost.md": Section("Cost per model and resolution",
                           f"Counted on the meta device at batch 1, fp32. {tables.CONVENTION} Activation peak: "
                           "live tensors during one forward (train: forward + backward), weights and input "
                           "excluded; weights: parameters and buffers at fp32. MiB = 2^20 bytes.",
                           tables.cost_table(data.cost), cost_notes),
        "components.md": Section(f"MACs per component at {size} px" if size else "MACs per component",
                                 "attn_matmul is attention's QK^T + AV; attn_proj the qkv and output projections.",
                                 tables.component_table(cost, size),
                                 _unless_empty(cost, "classifier cost rows at a square size")),
        "attention.md": Section("Attention share against tokens",
                                "Share of MACs in attention matmuls; N* = 6d is where one layer's quadratic term "
                                "2N^2 d equals its linear terms 12Nd^2 (MLP ratio 4).", attention, attention_notes),
        "scaling.md": Section("Scaling with resolution",
                              "Exponent k of a log-log least-squares fit, quantity ~ side^k (k = 2 is linear in "
                              "tokens, k = 4 quadratic). Latency fits join only rows of one machine and one "
                              "setting, and leave noisy timings out.", scaling,
                              scaling_notes + _unless_empty(cost, "cost rows")),
        "throughput.md": Section("Throughput, latency and MFU (measured)",
                                 "Each row names its machine. img/s (mean) = batch x steps / timed span; img/s "
                                 "(at p50) = batch / median step latency; latencies are per step of the whole "
                                 "batch. MFU = 2 x MACs x img/s / the machine's measured GEMM peak (x3 for a "
                                 "training step); above 100% is kept and marked. 'noisy': step latencies' cv "
                                 "above 0.2 or other processes above 15% of the cores timed on (beyond the cores "
                                 "left free) while timing. A p99 from fewer than 100 steps says how many (n=...): "
                                 "it is close to the slowest step.",
                                 tables.throughput_table(throughput, data.runs), _unless_empty(throughput, "timed rows")),
        "detection.md": Section("Detection-style inputs: H x W sizes and feature extractors",
                                "Counted on the meta device at each row's batch and dtype. 'features': the backbone "
                                "as a detector's neck sees it (no pooling, no head), each map [C,H,W] with its stride "
                                f"(input height / map height). {tables.CONVENTION} Training memory: fp32 weights, "
                                "gradients and optimizer state + the training step's activation peak (mixed "
                                "precision adds autocast's weight copies). img/s: the latest timed row at the same "
                                "input, eager and ONNX Runtime side by side.",
                                detection_table(data.detection_cost, data.detection_timed),
                                _unless_empty(data.detection_cost, "H x W or feature-extractor cost rows")),
        "accuracy.md": Section("Accuracy beside cost",
                               "Top-1 on ImageNet-1k val at the resolution it was measured at, for a named "
                               "checkpoint (its timm tag) and that checkpoint's pretraining group. "
                               f"{ACCURACY_POLICY[weights]} Beside it the five shifted test sets of the same "
                               "checkpoint (timm's evaluation: ImageNet-ReaL, ImageNetV2 matched-frequency, "
                               "ImageNet-Sketch, ImageNet-R, ImageNet-A) and, side by side, "
                               f"{ACCURACY_POLICY['paper' if weights != 'paper' else 'default']} GMACs counted "
                               "at that same resolution. Pareto = no single-crop model of the same pretraining "
                               "group is both cheaper and more accurate; across groups the numbers are not "
                               "comparable.", accuracy_table(points, weights),
                               accuracy_notes + _unless_empty(points, "model with accuracy at a counted size")
                               + ([f"checkpoints chosen among pretraining {', '.join(pretraining)} only"]
                                  if pretraining else [])),
        "textbook.md": Section("Textbook check: the ViT-B/16 worked figures",
                               "Reference figures from the closed forms of the ViT paper (Dosovitskiy et al. 2021, "
                               "Sec. 3.1, Eq. 1-4: N = HW/P^2 tokens; per layer 3Nd^2 qkv + N^2 d QK^T + N^2 d AV "
                               "+ Nd^2 projection + 8Nd^2 MLP) as a textbook tabulates them (its parameter table "
                               "leaves out biases, the class token and the final norm: 86,482,408 for ViT-B/16), "
                               "and Swin's windowed form 4hwC^2 + 2M^2 hwC (Liu et al. 2021, Eq. 1); the "
                               "'reference' column is computed by analysis.count.closed_form, 'ours' is counted "
                               "from results/.", textbook_table(cost)),
        "detectors.md": Section("Whole detectors beside the published tables",
                                "Counted on meta at batch 1, fp32: the backbone with an FPN (P2-P6, 256 channels; "
                                "ViTDet: its own pyramid and a pooled P6), the RPN on every level and the RoI heads of "
                                "the mmdetection configs behind Swin's and ConvNeXt's tables (Mask R-CNN: shared "
                                "2-fc box head, 4-conv mask head; Cascade: 3 x 4conv1fc box heads and 3 mask heads), "
                                "1000 RoIs per image through each box head and 100 through each mask head, as "
                                "mmdetection's get_flops runs them. Published 'FLOPs' are mmcv's count: "
                                "multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling "
                                "elements, without functional matmuls (Swin's attention QK^T and AV, 'attn GMACs'). "
                                "RoIAlign counts 0 MACs here and there; NMS does not run.",
                                detector_table(data.detectors),
                                _unless_empty(data.detectors, "detector rows") + detector_notes(data.detectors)),
        "not_measured.md": Section("Rows not measured",
                                   "The latest row of each measurement that was skipped by a model's size rule or "
                                   "failed; tables above never show them.", tables.not_measured_table(data.not_measured),
                                   ([f"{len(data.bad_lines)} line(s) of results/ are not valid rows and were "
                                     f"skipped: " + "; ".join(str(b) for b in data.bad_lines[:5])]
                                    if data.bad_lines else []) +
                                   ([f"{data.left_out} row(s) of feature extractors, timed at H x W sizes or "
                                     f"without the fields the tables compute with are in results/ but not in "
                                     f"these tables (detection.md shows the measured H x W and feature-extractor "
                                     f"ones; zoo.load_frame reads them all)"]
                                    if data.left_out else [])),
        "choosing.md": TextSection("Choosing a backbone",
                                   "Worked questions answered by `python -m zoo.select` (counted constraints and "
                                   "published accuracy only, so the same on any machine; a measured latency "
                                   "question is in the README with its machine). Every registry model is a "
                                   "candidate; each excluded one names the first constraint it broke.",
                                   choosing_markdown(data.answers)),
        "roofline.md": Section("Roofline and MACs-only latency against measured",
                               "Timed eager inference rows with a roofline estimate (sum over ops of max(FLOPs / "
                               "GEMM peak, bytes / triad bandwidth), both measured on the row's machine; 5 us per "
                               "kernel on GPUs), against a MACs-only estimate (latency = k x MACs x batch, k fitted "
                               "on the same rows: its median ratio is 1 by construction). Spearman: rank "
                               "correlation with the measured p50 latency; spread: p90 / p10 of predicted / "
                               "measured.", roofline.table(rooflined),
                               [] if len(rooflined) else [roofline.NO_ROWS]),
    }


def draw(data: ReportRows, out: Path, weights: str = "default", pretraining=None) -> dict[str, list[dict]]:
    """Every plot; plots.json keeps the data of each and, under STYLE_KEY, what each shows (style.DRAWN:
    the colours drawn per family, the tick labels of log axes)."""
    style.DRAWN.clear()
    cost = data.square_cost
    points, _ = accuracy_points(cost, data.throughput, weights, pretraining)
    size = tables.components_size(cost)
    drawn = [plots.macs_vs_resolution(cost, out / PLOT_FILES[0]),
             plots.attention_share_vs_tokens(cost, out / PLOT_FILES[1]),
             plots.throughput_vs_resolution(data.throughput, out / PLOT_FILES[2]),
             plots.component_shares(cost, out / PLOT_FILES[3], size),
             plots.accuracy_vs(points, "gmacs", out / PLOT_FILES[4], "GMACs per image"),
             plots.accuracy_vs(points, "imgs_per_s", out / PLOT_FILES[5], "img/s at batch 1"),
             roofline.plot(roofline.frame(data.throughput), out / PLOT_FILES[6])]
    return {**dict(zip(PLOT_FILES, drawn)), STYLE_KEY: {name: style.DRAWN.get(name) for name in PLOT_FILES}}


def build_reports(results_dir: str | Path = ".", reports_dir: str | Path | None = None, weights: str = "default",
                  pretraining=None) -> list[Path]:
    data = load(results_dir)
    out = Path(reports_dir) if reports_dir else Path(results_dir) / "reports"
    out.mkdir(parents=True, exist_ok=True)
    content = sections(data, weights, pretraining)
    written = []
    for name, section in content.items():
        write_atomic(out / name, section.markdown())
        written.append(out / name)
    plotted = draw(data, out, weights, pretraining)
    write_atomic(out / PLOT_DATA_FILE, strict_dumps(plotted, indent=1, sort_keys=True) + "\n")
    write_atomic(out / HTML_FILE, page("archzoo report", list(content.values()), [out / p for p in PLOT_FILES],
                                       style.family_key_html()))
    return written + [out / p for p in PLOT_FILES] + [out / PLOT_DATA_FILE, out / HTML_FILE]
