"""The textbook check: ViT-B/16's worked figures, as closed forms give them, against the counted rows.

Reference values are computed here from analysis.count.closed_form (the ViT paper's Eq. 1-4 with
N = HW/P^2; Swin's Eq. 1), never typed in; "ours" comes from results/. Each row says why the two
differ where they do.
"""
from __future__ import annotations

from analysis.count.closed_form import (ViTShape, attention_crossover_tokens, global_attention_layer_macs,
                                        vit_macs, vit_params_beyond_textbook, vit_textbook_params)

from ..console.markdown import markdown_table

VIT_B16 = ViTShape(embed_dim=768, depth=12, mlp_dim=3072, patch_size=16)
D, LAYERS = VIT_B16.embed_dim, VIT_B16.depth


def textbook_rows(cost: list[dict]) -> list[list]:
    rows = {(r["model"], r["img_size"]): r for r in cost}
    vit = rows.get(("vit_b16", 224))
    if vit is None:
        return [["ViT-B/16 at 224", "-", "missing from results/", "run `python -m zoo.report --refresh`"]]
    out: list[list] = []
    params = vit_textbook_params(VIT_B16, 224)
    beyond = vit_params_beyond_textbook(VIT_B16)
    pc = vit["params_by_component"]
    out.append(["params: patch embedding 16*16*3*768 + 768", f"{params['patch_embed']:,}",
                f"{pc.get('patch_embed', 0):,}", _same(params["patch_embed"], pc.get("patch_embed", 0))])
    out.append(["params: classifier head 768*1000 + 1000", f"{params['head']:,}", f"{pc.get('head', 0):,}",
                _same(params["head"], pc.get("head", 0))])
    out.append(["params: total, textbook convention", f"{params['total']:,}", f"{vit['params']:,}",
                f"+{vit['params'] - params['total']:,} = " + " + ".join(f"{v:,} {k}" for k, v in beyond.items())])
    macs = vit_macs(VIT_B16, 224)
    mc = vit["macs_by_component"]
    n = VIT_B16.tokens(224)
    for label, part in (("QKV + output projection (4Nd^2)", "attn_proj"), ("QK^T + AV (2N^2 d)", "attn_matmul"),
                        ("MLP (8Nd^2)", "mlp")):
        out.append([f"MACs per layer: {label}, N = {n}", f"{macs[part] // LAYERS:,}", f"{mc.get(part, 0) // LAYERS:,}",
                    _same(macs[part], mc.get(part, 0))])
    layer = global_attention_layer_macs(n, D)
    counted_layer = sum(mc.get(p, 0) for p in ("attn_proj", "attn_matmul", "mlp")) // LAYERS
    out.append([f"MACs: one layer 12Nd^2 + 2N^2 d, N = {n}", f"{layer['linear'] + layer['quadratic']:,}",
                f"{counted_layer:,}", _same(layer["linear"] + layer["quadratic"], counted_layer)])
    out.append(["MACs: patch embedding 196 x 768 x 768", f"{macs['patch_embed']:,}", f"{mc.get('patch_embed', 0):,}",
                _same(macs["patch_embed"], mc.get("patch_embed", 0))])
    out.append(["MACs: whole model (12 layers + patch embedding + head)", f"{macs['total']:,}", f"{vit['macs']:,}",
                _same(macs["total"], vit["macs"])])
    for side in (224, 384, 512, 1024):
        patches = (side // 16) ** 2
        one = global_attention_layer_macs(patches, D)
        share = 100 * one["quadratic"] / (one["quadratic"] + one["linear"])
        r = rows.get(("vit_b16", side))
        ours = f"{100 * r['attn_share']:.2f}% (N = {r['tokens']})" if r else "(not in results/)"
        out.append([f"attention share at {side} px (N = {patches} patches)", f"{share:.2f}% (one layer)", ours,
                    "reference: one layer's 2N^2 d / (12Nd^2 + 2N^2 d); ours: the whole model (patch embedding "
                    "and head in the denominator) with the class token in N"])
    out.append(["crossover N* where 2N^2 d = 12Nd^2", f"{attention_crossover_tokens(D):,.0f} (= 6d)", "-",
                "closed form only"])
    r50 = rows.get(("resnet50", 224))
    if r50:
        out.append(["ViT-B/16 / ResNet-50 MACs at 224", "-", f"{vit['macs'] / r50['macs']:.2f} "
                    f"({vit['macs'] / 1e9:.2f} / {r50['macs'] / 1e9:.2f} G)", "both counted"])
    for patch in (8, 16, 32):
        r = rows.get((f"vit_b{patch}", 224))
        out.append([f"tokens at 224, patch {patch}: HW/P^2 + class token", f"{(224 // patch) ** 2 + 1}",
                    f"{r['tokens']}" if r else "(not in results/)", "" if not r else _same((224 // patch) ** 2 + 1,
                                                                                          r["tokens"])])
    return out + _swin_rows(rows)


def _same(reference: int, ours: int) -> str:
    return "equal" if reference == ours else f"differs by {ours - reference:+,}"


def _swin_rows(rows: dict) -> list[list]:
    swin = rows.get(("swin_t", 224))
    if swin is None:
        return []
    # Swin-T at 224: stage grids 56, 28, 14, 7; widths 96..768; depths 2, 2, 6, 2; window M = 7
    grids, widths, depths, window = (56, 28, 14, 7), (96, 192, 384, 768), (2, 2, 6, 2), 7
    windowed = sum(d * 2 * window**2 * s * s * c for s, c, d in zip(grids, widths, depths))
    global_ = sum(d * 2 * (s * s) ** 2 * c for s, c, d in zip(grids, widths, depths))
    return [
        ["Swin-T at 224: windowed attention 2M^2 hwC per block", f"{windowed:,}", f"{swin['attn_macs']:,}",
         _same(windowed, swin["attn_macs"])],
        ["Swin-T at 224: windowed vs global attention 2(hw)^2 C", f"1/{global_ / windowed:.1f}",
         f"1/{global_ / swin['attn_macs']:.1f}", "global attention on each stage's full grid, closed form"],
    ]


def textbook_table(cost: list[dict]) -> str:
    return markdown_table(["check", "reference (closed form)", "ours (counted)", "why they differ"],
                          textbook_rows(cost))
