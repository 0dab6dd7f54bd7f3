"""The segmentation section: per counted backbone and heads, inference at the published row's test scale (whole
and mmseg's slide test) and a training step at its crop, beside the published ADE20K row they are shown with; then
every other published row shipped (zoo.models.segmenters.published), each with its recipe and source."""
from __future__ import annotations

from ..console.markdown import markdown_table as markdown, mib
from ..models.segmenters.published import ADE20K, published_cells
from ..store.schema import row_size
from .tables import g

INTRO = ("Counted on meta, per image: the backbone's maps at strides 4-32 (a plain ViT: blocks at the end of each "
         "quarter through mmseg's MultiLevelNeck) -> UPerHead (PPM 1, 2, 3, 6 on the last map, FPN, 512 channels, "
         "BN + ReLU, fpn_bottleneck, 150 classes) -> logits resized to the input, as the mmsegmentation configs "
         "behind the Swin, ConvNeXt and mmseg ADE20K tables build it. 'whole GMACs' is inference on the whole image "
         "at the published row's test scale (crop x 4 crop: mmseg's ADE20K img_scale; mmseg's get_flops runs "
         "forward_dummy: backbone + decode head); 'slide' is mmseg's slide_inference at that size (windows of the "
         "crop every 2/3 of it, the last flush with the edge: the ConvNeXt configs' 512/341 and 640/426), each "
         "window the whole segmenter; the recipe column says which test the published mIoU used. The auxiliary FCN "
         "head runs in training only, so its GMACs are shown on their own and are in the training step, and its "
         "params in 'params'. The training step is counted at the recipe's crop and images per GPU (activation peak "
         "per GPU's batch, fp32). Published 'FLOPs' (Swin and ConvNeXt only) are mmcv's count, i.e. "
         "multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling elements, without "
         "functional matmuls (Swin's attention, 'attn GMACs') or F.interpolate; neither README names the input "
         "size: crop x 4 crop is where they reproduce, so the ratio is shown only there. mIoU: ADE20K val, single "
         "scale and multi-scale + flip, of the published row of the same backbone and heads (default pick: the "
         "counted size's crop, ImageNet-1K, the backbone authors' table, supervised, the longest schedule). Every "
         "other published row of the cited tables (other recipes or heads, or not counted) follows with its "
         "counted cells blank.")


def _ratio(value) -> str | None:
    return None if value is None else f"{value:.3f}"


RECIPE_KEYS = ("published_name", "pretraining", "crop", "schedule", "test")


def _recipe(published) -> str | None:
    """The recipe line of a row's seg_recipe; None where the stored entry is missing or damaged (a results file
    is not trusted: a hand-edited row shows no recipe rather than a crash)."""
    if not isinstance(published, dict) or not all(k in published for k in RECIPE_KEYS):
        return None
    return (f"{published['published_name']}, {published['pretraining']}, {published['crop']}x{published['crop']} "
            f"crop, {published['schedule']}, tested {published['test']}")


def _pairs(rows: list[dict]) -> list[tuple[dict, dict | None]]:
    """(inference row, training row) per backbone and heads: the inference row with a slide count (else the
    largest), the training step at the smallest size (the crop); None where none was counted."""
    by_pair: dict[tuple, list[dict]] = {}
    for r in rows:
        by_pair.setdefault((r["model"], r["settings"]["segmenter"]), []).append(r)
    pairs = []
    for _, group in sorted(by_pair.items()):
        inference = max(group, key=lambda r: (r.get("slide_macs") is not None, r["img_h"] * r["img_w"]))
        trained = [r for r in group if r.get("train_act_peak_bytes") is not None]
        pairs.append((inference, min(trained, key=lambda r: r["img_h"] * r["img_w"]) if trained else None))
    return pairs


def segmenter_table(rows: list[dict]) -> tuple[str, list[str]]:
    """Each counted backbone and heads beside its published row, then every shipped published row none matched
    (another recipe or heads, or not counted), its counted cells blank: one table, every row of the cited tables.
    Returns (the table, its footnotes): each source cited as [n], so the table fits a page."""
    headers = ["backbone", "segmenter", "recipe (published)", "test size (H x W)", "params M (published)",
               "params / published", "whole GMACs / image (published GFLOPs, mmcv, at H x W)", "GMACs / published",
               "slide: windows, GMACs / image", "decode / aux head GMACs", "attn GMACs", "backbone % of MACs",
               "train step: crop, batch, act peak (MiB / batch)", "mIoU % (ms+flip)", "source"]
    body, shown, notes = [], set(), []

    def cite(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    def both(value, other) -> str | None:
        return None if value is None and other is None else \
            f"{'-' if value is None else value} ({'-' if other is None else other})"

    for r, trained in _pairs(rows):
        cells, published = published_cells(r), r.get("seg_published")
        parts = r.get("segmenter_macs_by_part") or {}
        if published:
            shown.add(published["source"])
        slide = None if r.get("slide_macs") is None else \
            f"{r['slide_windows'][0] * r['slide_windows'][1]} of {r['settings']['slide'].replace(',', '/')}, " \
            f"{g(r['slide_macs'], 1)}"
        train = None if trained is None else \
            f"{row_size(trained).label}, {trained['batch_size']}, {mib(trained['train_act_peak_bytes'])}"
        body.append([r["model"], r["settings"]["segmenter"], _recipe(published), row_size(r).label,
                     both(f"{r['params'] / 1e6:.2f}", cells.get("published_params_m")),
                     _ratio(cells.get("params_vs_published")), both(g(r["macs"], 1), cells.get("published_gflops")),
                     _ratio(cells.get("gmacs_vs_published")), slide,
                     both(g(parts.get("decode_head"), 1), g(parts.get("auxiliary_head"), 1)), g(r.get("attn_macs"), 1),
                     None if r.get("backbone_share") is None else f"{100 * r['backbone_share']:.1f}", train,
                     both(r.get("miou"), r.get("miou_ms")),
                     cite(published["source"]) if published else (r.get("seg_unmatched") or "none published")])
    for p in ADE20K:
        if p.source not in shown:
            gflops = None if p.gflops is None else "{} at {}x{}".format(p.gflops, *p.flops_size)
            body.append([p.model, p.segmenter, _recipe({**vars(p), "source": p.source}), None, None if
                         p.params_m is None else both(None, p.params_m), None, None if gflops is None else
                         both(None, gflops), None, None, None, None, None, None, both(p.miou, p.miou_ms),
                         cite(p.source) + " (not counted here)"])
    return markdown(headers, body), notes
