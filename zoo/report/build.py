"""Write reports/: one markdown file per table, PNG plots with the data behind them (plots.json),
and index.html with everything. Built from results/ alone; any subset of rows, or none, gives a
report, and the page says what it left out and why."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..models.pretraining import PRETRAINING
from ..console.markdown import markdown_inline, markdown_text
from ..store.safe_io import strict_dumps, write_atomic
from . import page_plots, predicted_gpu, roofline, summary, tables, tpu_compute
from .accuracy import accuracy_points, accuracy_table, citations
from .choosing import choosing_markdown
from .detection import detection_table
from .detectors import detector_notes, detector_table, published_table
from .families import family_key_html
from .html import page
from .redraw import PLOT_DATA_FILE, PLOT_FILES, STYLE_KEY, draw  # noqa: F401 - STYLE_KEY: tests read it here
from .rows import ReportRows, load
from .segmentation import INTRO as SEGMENTATION_INTRO
from .segmentation import segmenter_table
from .textbook import textbook_table
from .views import answer_views

MARKDOWN_FILES = ("cost.md", "components.md", "attention.md", "scaling.md", "throughput.md", "detection.md",
                  "accuracy.md", "textbook.md", "detectors.md", "segmentation.md",
                  "not_measured.md", "choosing.md", "roofline.md", "predicted_gpu.md", "tpu_pretraining.md")
# where each plot sits on the page: beside the table it summarises (and the Pareto plots in the summary too)
PLACEMENT = dict(zip(PLOT_FILES, (("cost.md",), ("attention.md",), ("throughput.md",), ("components.md",),
                                  ("summary", "accuracy.md"), ("summary", "accuracy.md"), ("roofline.md",),
                                  ("throughput.md",), ("detectors.md",),
                                  *(("predicted_gpu.md",) for _ in predicted_gpu.PLOT_FILES))))
HTML_FILE = "index.html"
REPORT_FILES = (*MARKDOWN_FILES, *PLOT_FILES, PLOT_DATA_FILE, HTML_FILE)   # each written whole, renamed into place


@dataclass
class Section:
    heading: str
    intro: str
    table: str
    notes: list[str] = field(default_factory=list)      # what was left out, and why
    footnotes: list[str] = field(default_factory=list)  # long sources, cited from the table's cells as [n]
    when_empty: str = ""      # the one line shown for no rows where none is good news (nothing failed)

    @property
    def left_out(self) -> str | None:
        """Why the section shows no table: it has no rows (its first note says why). The page and the markdown
        then hold one line instead of an empty table."""
        if len(self.table.strip().splitlines()) > 2:
            return None
        return next((n for n in self.notes if n.startswith("no ")), "no rows for this table in results/")

    @property
    def empty_line(self) -> str | None:
        """The one line the section shows instead of a table without rows, or None when it has rows."""
        if self.left_out is None:
            return None
        if self.when_empty:
            return self.when_empty + "".join(f" NB: {n}" for n in self.notes)
        return f"Left out: {self.left_out}"

    def markdown(self) -> str:
        # NB: the intro, notes and footnotes carry rows' text (a device, a source, a machine): markdown_inline
        # keeps it text; the table's cells are markdown_text already (zoo.console.markdown.markdown_table)
        if self.empty_line:
            return f"# {self.heading}\n\n{markdown_inline(self.empty_line)}\n"
        notes = "".join(f"\nNB: {markdown_text(n)}\n" for n in self.notes)     # notes name rows' machines
        cited = "".join(f"\n[{i}] {markdown_inline(text)}\n" for i, text in enumerate(self.footnotes, 1))
        return f"# {self.heading}\n\n{markdown_inline(self.intro)}\n{notes}\n{self.table}{cited}"


@dataclass
class TextSection:
    """A section that is its own markdown (no single table): the page shows it as preformatted text."""
    heading: str
    intro: str
    text: str
    notes = ()                       # it says what it left out in its own text

    def markdown(self) -> str:
        return f"# {self.heading}\n\n{markdown_inline(self.intro)}\n\n{self.text}"


ACCURACY_POLICY = {  # what each --weights column is
    "default": "default: timm's own evaluation (one pipeline, results-imagenet.csv at aa4b585) of the checkpoint "
               "timm.create_model(arch, pretrained=True) loads for that size: timm's default tag when evaluated "
               "there, else the first tag in timm's pretrained order evaluated there.",
    "paper": "published (--weights paper): the authors' number for their checkpoint, from a table of their "
             "paper or, for a re-release, their repository; the source column says which and cites it ('not in "
             "timm' where timm does not ship those weights).",
    "best": "best: timm's most accurate evaluated checkpoint at that size.",
}


def _unless_empty(rows: list, what: str) -> list[str]:
    return [] if rows else [f"no {what} in results/"]


def _skipped(bad_lines: list, are_not: str) -> list[str]:
    """One note naming the lines of results/ skipped (file:line: why, the first five), or none."""
    return [f"{len(bad_lines)} line(s) of results/ {are_not} and were skipped: "
            + "; ".join(str(b) for b in bad_lines[:5])] if bad_lines else []


def _predicted_notes(data: ReportRows) -> list[str]:
    """Why predicted rows are missing (the whole file unreadable, or every line skipped), then the lines skipped."""
    skipped = _skipped(data.predicted_bad_lines, "are no usable predicted rows")
    if data.predicted_problem or (skipped and not data.predicted):
        return [f"no usable predicted GPU rows: {data.predicted_problem or skipped[0]}"]
    return _unless_empty(data.predicted, "predicted GPU rows (run `python -m zoo.report --refresh`)") + skipped


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
    seg_table, seg_sources = segmenter_table(data.segmenters)
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
        "detection.md": Section("Detection-style inputs: H x W sizes, feature extractors and whole detectors",
                                "Counted on the meta device at each row's batch and dtype. 'features': the backbone "
                                "as a detector's neck sees it (no pooling, no head), each map [C,H,W] with its stride "
                                "(input height / map height); 'detector: <name>': the whole detector on the backbone "
                                "(detectors.md: its parts and the published figures) "
                                f"{tables.CONVENTION} Training memory: the step as a CUDA "
                                "GPU holds it (fp32 weights, gradients and optimizer state, the step's activation "
                                "peak with autocast's casts, each booked by the caching allocator; training.md). "
                                "img/s: the latest timed row at the same "
                                "input, eager and ONNX Runtime side by side.",
                                detection_table(data.detection_cost, data.detection_timed),
                                _unless_empty(data.detection_cost, "H x W, feature-extractor or detector cost rows")),
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
                                  if pretraining else []), citations(points)),
        "textbook.md": Section("Textbook check: the ViT-B/16 worked figures",
                               "Reference figures from the closed forms of the ViT paper (Dosovitskiy et al. 2021, "
                               "Sec. 3.1, Eq. 1-4: N = HW/P^2 tokens; per layer 3Nd^2 qkv + N^2 d QK^T + N^2 d AV "
                               "+ Nd^2 projection + 8Nd^2 MLP) as a textbook tabulates them (its parameter table "
                               "leaves out biases, the class token and the final norm: 86,482,408 for ViT-B/16), "
                               "and Swin's windowed form 4hwC^2 + 2M^2 hwC (Liu et al. 2021, Eq. 1); the "
                               "'reference' column is computed by analysis.count.closed_form, 'ours' is counted "
                               "from results/.", textbook_table(cost)),
        "detectors.md": TextSection("Whole detectors beside the published tables",
                                    "Counted on meta at each row's batch and dtype (MACs per image; memory per "
                                    "batch): the backbone with an FPN (P2-P6, 256 channels; ViTDet: its own "
                                    "pyramid and a pooled P6), the RPN on every level and the RoI heads of the "
                                    "detector's recipe: maskrcnn / cascade_maskrcnn = the mmdetection configs "
                                    "behind Swin's and ConvNeXt's tables (Mask R-CNN: shared 2-fc box head, "
                                    "4-conv mask head; Cascade: 3 x 4conv1fc box heads and 3 mask heads); "
                                    "vitdet_maskrcnn / vitdet_cascade_maskrcnn = detectron2's ViTDet configs "
                                    "(2-conv RPN, 4conv1fc box heads and mask head with LayerNorm; Cascade: 3 "
                                    "class-agnostic box heads, one mask head). 1000 RoIs per image through each "
                                    "box head and 100 through each mask head, as mmdetection's get_flops runs "
                                    "them. Published 'FLOPs' are mmcv's count at 800 x 1280 (H x W): "
                                    "multiply-accumulates of conv/linear modules plus bias, norm, activation and "
                                    "pooling elements, without functional matmuls (Swin's attention QK^T and AV, "
                                    "'attn GMACs'); at another size the figure is named with its size and no "
                                    "ratio is given. Box and mask AP: COCO val2017 as published for the same "
                                    "backbone, heads and the backbone's main pretraining (the longest schedule); "
                                    "none where the heads or pretraining differ. RoIAlign counts 0 MACs here and "
                                    "there; NMS does not run.",
                                    "\n\n".join(
                                        [f"NB: {n}" for n in _unless_empty(data.detectors, "detector rows")
                                         + detector_notes(data.detectors)]
                                        + [detector_table(data.detectors).strip(),
                                           "### Every row of the published COCO tables",
                                           "Each beside our batch-1 fp32 count of the same backbone and heads at "
                                           "800 x 1280 where results/ holds one. detectron2's Swin-B/L and "
                                           "MViTv2 rows use heads archzoo does not build "
                                           "(detectron2_mvitv2_cascade_maskrcnn) and are never matched.",
                                           published_table(data.detectors).strip()])),
        "segmentation.md": Section("Whole segmenters beside the published ADE20K tables", SEGMENTATION_INTRO,
                                   seg_table, _unless_empty(data.segmenters, "segmenter rows"),
                                   footnotes=seg_sources),
        "not_measured.md": Section("Rows not measured",
                                   "The latest row of each measurement that was skipped by a model's size rule or "
                                   "failed; tables above never show them.", tables.not_measured_table(data.not_measured),
                                   _skipped(data.bad_lines, "are not valid rows") +
                                   ([f"{data.left_out} row(s) of feature extractors, timed at H x W sizes or "
                                     f"without the fields the tables compute with are in results/ but not in "
                                     f"these tables (detection.md shows the measured H x W and feature-extractor "
                                     f"ones; zoo.load_frame reads them all)"]
                                    if data.left_out else []),
                                   when_empty="Every measurement in results/ ran: none was skipped by a size rule "
                                              "or failed."),
        "choosing.md": TextSection("Choosing a backbone",
                                   "Worked questions answered by `python -m zoo.select` (counted constraints and "
                                   "published accuracy only, so the same on any machine; a measured latency "
                                   "question is in the README with its machine). Each question searches the "
                                   "registry's models only (the default --models all; a timm:<name> "
                                   "model joins with --models); each excluded one names the first constraint it "
                                   "broke. A distilled checkpoint counts its teacher's pretraining.",
                                   choosing_markdown(data.answers, measured=data.select_answer)),
        "roofline.md": Section("Roofline and MACs-only latency against measured",
                               "Timed eager inference rows with a roofline estimate (sum over ops of max(FLOPs / "
                               "GEMM peak, bytes / triad bandwidth), both measured on the row's machine; 5 us per "
                               "kernel on GPUs), against a MACs-only estimate (latency = k x MACs x batch, k fitted "
                               "on the same rows: its median ratio is 1 by construction). Spearman: rank "
                               "correlation with the measured p50 latency; spread: p90 / p10 of predicted / "
                               "measured.", roofline.table(rooflined),
                               [] if len(rooflined) else [roofline.NO_ROWS]),
        "predicted_gpu.md": Section(predicted_gpu.HEADING, predicted_gpu.intro(data.predicted),
                                    predicted_gpu.predicted_table(data.predicted),
                                    _predicted_notes(data),
                                    footnotes=predicted_gpu.sources(data.predicted)),
        "tpu_pretraining.md": Section(tpu_compute.HEADING, tpu_compute.INTRO, tpu_compute.tpu_table(data.tpu),
                                      [f"no usable TPU rows: {data.tpu_problem}"] if data.tpu_problem else
                                      _unless_empty(data.tpu, "TPU pre-training rows (run `python -m zoo.report "
                                                              "--refresh`)")),
    }


CAPTIONS = dict(zip(PLOT_FILES, (
    "GMACs per image against input side", "attention's share of MACs against tokens",
    "throughput against input side (fp32, batch 1)", "MACs per component", "top-1 against GMACs (Pareto per "
    "pretraining group)", "top-1 against measured img/s at batch 1 (Pareto per pretraining group)",
    "roofline and MACs-only latency against measured", "eager PyTorch against ONNX Runtime, per model",
    "published task accuracy (COCO box AP, ADE20K mIoU) against counted GFLOPs of the whole detector or segmenter",
    *(f"top-1 against PREDICTED img/s on {d} (224 px, batch 64, {predicted_gpu.dtype_on(d)} autocast; not measured; "
      "Pareto per pretraining group)" for d in predicted_gpu.DEVICES))))


def summary_of(data: ReportRows) -> dict:
    three, note = summary.default_three(data)
    return {"three": three, "three_note": note, "answers": summary.select_answer_line(data.select_answer) + summary.answer_lines(data.answers), "groups": PRETRAINING,
            "built": "Built from results/ alone by `python -m zoo.report`: counts on the meta device (MACs; FLOPs = "
                     "2 x MACs), published and timm-evaluated accuracy, and timings that each name their machine. "
                     "Long tables sort by a click on a heading and filter by family, size and pretraining."}


def build_reports(results_dir: str | Path = ".", reports_dir: str | Path | None = None, weights: str = "default",
                  pretraining=None, pictures: bool = True, kept: Path | None = None) -> list[Path]:
    """Every report file into `reports_dir` (default <results_dir>/reports); with `pictures` False no PNG is
    written (redraw.draw), the page then holds each figure without its bytes. A figure is drawn only where neither
    `reports_dir` nor `kept` (default <results_dir>/reports) holds a PNG drawn from the same inputs."""
    data = load(results_dir)
    out = Path(reports_dir) if reports_dir else Path(results_dir) / "reports"
    out.mkdir(parents=True, exist_ok=True)
    content = sections(data, weights, pretraining)
    written = []
    for name, section in content.items():
        write_atomic(out / name, section.markdown())
        written.append(out / name)
    plotted = draw(data, out, weights, pretraining, pictures, kept or Path(results_dir) / "reports")
    write_atomic(out / PLOT_DATA_FILE, strict_dumps(plotted, indent=1, sort_keys=True) + "\n")
    live = page_plots.figures(plotted, CAPTIONS, summary.facets(data))
    shown = {name: (out / name, CAPTIONS[name], bool(plotted[name]), live.get(name)) for name in PLOT_FILES}
    views, missing = answer_views(data)
    missing += [data.select_answer_problem] if data.select_answer_problem else []
    write_atomic(out / HTML_FILE, page("archzoo report", content, shown, PLACEMENT, summary_of(data),
                                       summary.facets(data), family_key_html(), (views, missing)))
    return written + [out / p for p in PLOT_FILES] + [out / PLOT_DATA_FILE, out / HTML_FILE]
