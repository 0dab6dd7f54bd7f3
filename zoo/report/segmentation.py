"""The segmentation section: counted whole segmenters beside the published ADE20K rows of the same recipe, then
every other published row shipped (zoo.models.segmenters.published), each with its recipe and source."""
from __future__ import annotations

from ..console.markdown import markdown_table as markdown, mib
from ..models.segmenters.published import ADE20K, published_cells
from ..runs.schema import row_size
from .tables import g

INTRO = ("Counted on meta, per image: the backbone's maps at strides 4-32 (a plain ViT: blocks at the end of each "
         "quarter through mmseg's MultiLevelNeck) -> UPerHead (PPM 1, 2, 3, 6 on the last map, FPN, 512 channels, "
         "BN + ReLU, fpn_bottleneck, 150 classes) -> logits resized to the input, as the mmsegmentation configs "
         "behind Swin's and ConvNeXt's ADE20K tables build it. 'GMACs / image' is inference (mmseg's get_flops "
         "runs forward_dummy: backbone + decode head); the auxiliary FCN head on stage 3 (256 channels, 1 conv) "
         "runs in training only, so its GMACs are shown on their own and are in the training memory and "
         "train MACs, and its params in 'params'. Published 'FLOPs' are mmcv's count, i.e. multiply-accumulates "
         "of conv/linear modules plus bias, norm, activation and pooling elements, without functional matmuls "
         "(Swin's attention, 'attn GMACs') or F.interpolate; neither README names the input size: 512 x 2048 "
         "(H x W) is where they reproduce, so the GFLOPs ratio is shown only for rows at that size. mIoU: ADE20K "
         "val, single scale and multi-scale + flip, of the published row with the same backbone, segmenter, "
         "schedule (160k), pretraining (ImageNet-1K) and crop (512). Every other published row of the cited "
         "tables (other recipes: ImageNet-22K at a 640 crop, MoBY pretraining; or not counted) follows with its "
         "counted cells blank: never matched across recipes.")


def _ratio(value) -> str | None:
    return None if value is None else f"{value:.3f}"


def _recipe(published: dict | None) -> str | None:
    return None if not published else \
        f"{published['pretraining']}, {published['crop']}x{published['crop']} crop, {published['schedule']}"


def segmenter_table(rows: list[dict]) -> tuple[str, list[str]]:
    """Each counted row beside its published row, then every shipped published row no counted row matched
    (another recipe, or not counted), its counted cells blank: one table, every row of the cited tables. Returns
    (the table, its footnotes): each source cited as [n], so the table fits a page."""
    headers = ["backbone", "segmenter", "recipe (published)", "res (px, H x W)", "batch, dtype",
               "params M (published)", "params / published", "GMACs / image (published GFLOPs, mmcv, at H x W)",
               "GMACs / published", "decode / aux head GMACs", "attn GMACs", "backbone % of MACs",
               "train act peak (MiB / batch)", "mIoU % (ms+flip)", "source"]
    body, shown, notes = [], set(), []

    def cite(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    def both(value, other) -> str | None:
        return None if value is None and other is None else \
            f"{'-' if value is None else value} ({'-' if other is None else other})"

    for r in sorted(rows, key=lambda r: (r["settings"]["segmenter"], r["model"], r["img_h"], r["img_w"],
                                         r["batch_size"], r["settings"]["dtype"])):
        cells, published = published_cells(r), r.get("seg_published")
        parts = r.get("segmenter_macs_by_part") or {}
        if published:
            shown.add(published["source"])
        body.append([r["model"], r["settings"]["segmenter"], _recipe(published), row_size(r).label,
                     f"{r['batch_size']}, {r['settings']['dtype']}",
                     both(f"{r['params'] / 1e6:.2f}", cells.get("published_params_m")),
                     _ratio(cells.get("params_vs_published")), both(g(r["macs"], 1), cells.get("published_gflops")),
                     _ratio(cells.get("gmacs_vs_published")),
                     both(g(parts.get("decode_head"), 1), g(parts.get("auxiliary_head"), 1)), g(r.get("attn_macs"), 1),
                     None if r.get("backbone_share") is None else f"{100 * r['backbone_share']:.1f}",
                     mib(r.get("train_act_peak_bytes")), both(r.get("miou"), r.get("miou_ms")),
                     cite(published["source"]) if published else "none of this recipe in the shipped tables"])
    for p in ADE20K:
        if p.source not in shown:
            body.append([p.model, p.segmenter, _recipe(vars(p)), None, None, both(None, p.params_m), None,
                         both(None, "{} at {}x{}".format(p.gflops, *p.flops_size)), None, None, None, None, None,
                         both(p.miou, p.miou_ms), cite(p.source) + " (not counted here)"])
    return markdown(headers, body), notes
