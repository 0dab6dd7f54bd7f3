"""The textbook check: the seed notes' worked examples for ViT-B/16, recomputed from results/.

Seed values are the notes' own figures (ViT chapter, ex. 3.5.1 and 3.5.2; Swin, prop. 3.5.2);
"ours" comes from the counted rows; each row says why the two differ where they do.
"""
from __future__ import annotations

from .tables import markdown

D, LAYERS = 768, 12
SEED_PARAMS = [  # (component, seed value, how the implementation differs)
    ("patch embedding 16*16*3*768 + 768", 590_592, "patch_embed", 1, ""),
    ("QKV projection, per layer (3 x 768^2)", 1_769_472, None, None, "seed leaves out the 2,304 qkv biases"),
    ("output projection, per layer (768^2)", 589_824, None, None, "seed leaves out the 768 proj biases"),
    ("attention projections, per layer (QKV + out)", 2_359_296, "attn_proj", LAYERS,
     "ours adds the 3,072 qkv + proj biases"),
    ("MLP d->4d->d, per layer (2 x 768 x 3072)", 4_718_592, "mlp", LAYERS, "ours adds the 3,840 fc1 + fc2 biases"),
    ("classifier head 768x1000 + 1000", 769_000, "head", 1, ""),
]
SEED_MACS = [  # (component, seed value in MACs, our component, divide by, reason)
    ("QKV + output projection, per layer (4Nd^2)", 348_585_984 + 116_195_328, "attn_proj", LAYERS, ""),
    ("QK^T + AV, per layer (2N^2 d)", 2 * 29_805_312, "attn_matmul", LAYERS, ""),
    ("MLP, per layer (8Nd^2)", 929_562_624, "mlp", LAYERS, ""),
    ("patch embedding (196 x 16*16*3 x 768)", 115_605_504, "patch_embed", 1, ""),
]
SEED_SHARE = {197: 4.1, 576: 11.1, 1024: 18.2, 4096: 47.1}   # ex. 3.5.1, quadratic share of one layer
SHARE_SIZES = {197: 224, 576: 384, 1024: 512, 4096: 1024}       # ViT-B/16 input side giving those N


def _row(rows: dict, model: str, size: int) -> dict | None:
    return rows.get((model, size))


def textbook_rows(cost: list[dict]) -> list[list]:
    rows = {(r["model"], r["img_size"]): r for r in cost}
    vit = _row(rows, "vit_b16", 224)
    out: list[list] = []
    if vit is None:
        return [["ViT-B/16 at 224", "-", "missing from results/", "run the deterministic refresh"]]
    pc, mc = vit["params_by_component"], vit["macs_by_component"]
    for label, seed, comp, per, why in SEED_PARAMS:
        ours = pc.get(comp, 0) // per if comp else None
        out.append([f"params: {label}", f"{seed:,}", f"{ours:,}" if ours is not None else "(in the row above)",
                    why or ("equal" if ours == seed else "differs")])
    out.append(["params: total (ex. 3.5.2)", "86,482,408", f"{vit['params']:,}",
                f"+{vit['params'] - 86_482_408:,}: 12 x 6,912 block biases, the class token (768) and the final "
                "LayerNorm (1,536), which the seed's table leaves out"])
    for label, seed, comp, per, why in SEED_MACS:
        ours = mc.get(comp, 0) // per
        out.append([f"MACs: {label}", f"{seed:,}", f"{ours:,}", why or ("equal" if ours == seed else "differs")])
    per_layer = (mc["attn_proj"] + mc["attn_matmul"] + mc["mlp"]) // LAYERS
    out.append(["MACs: one layer (ex. 3.5.2: 1,454 M)", "1,453,954,560", f"{per_layer:,}",
                "equal" if per_layer == 1_453_954_560 else "differs"])
    out.append(["MACs: total (17.56 G)", "17,563,060,224 (12 layers + patch embedding)", f"{vit['macs']:,}",
                f"+{vit['macs'] - 17_563_060_224:,}: the 768x1000 classifier head, which the seed's sum leaves out"])
    for n, seed in SEED_SHARE.items():
        r = _row(rows, "vit_b16", SHARE_SIZES[n])
        ours = f"{100 * r['attn_share']:.2f}% (N = {r['tokens']})" if r else "(not in results/)"
        out.append([f"attention share at N = {n}", f"{seed}%", ours,
                    "seed: one layer's 2N^2 d / (12Nd^2 + 2N^2 d) with N patches; ours: whole model (patch "
                    "embedding and head in the denominator) and N + 1 tokens with the class token"])
    out.append(["crossover N* = 6d", "4,608", f"{6 * D:,} (analysis.closed_form.attention_crossover_tokens)",
                "equal: 2N^2 d = 12 N d^2 at N = 6d"])
    r50 = _row(rows, "resnet50", 224)
    if r50:
        out.append(["ViT-B/16 / ResNet-50 MACs", "about 4.3 (17.6 / 4.1 G)",
                    f"{vit['macs'] / r50['macs']:.2f} ({vit['macs'] / 1e9:.2f} / {r50['macs'] / 1e9:.2f} G)",
                    "counted, timm's ResNet-50"])
        out.append(["ViT-B/16 / ResNet-50 params", "about 3.4", f"{vit['params'] / r50['params']:.2f}", ""])
    for patch, seed in ((8, 784), (16, 196), (32, 49)):
        r = _row(rows, f"vit_b{patch}", 224)
        out.append([f"tokens at 224, patch {patch}", f"{seed} (+1 class token)",
                    f"{r['tokens']}" if r else "(not in results/)", "ours counts the class token"])
    out += _swin_rows(rows)
    return out


def _swin_rows(rows: dict) -> list[list]:
    swin = _row(rows, "swin_t", 224)
    if swin is None:
        return []
    # global attention over each stage's whole grid, at swin_t's widths (96, 192, 384, 768) and depths
    grids, widths, depths = (56, 28, 14, 7), (96, 192, 384, 768), (2, 2, 6, 2)
    global_macs = sum(d * 2 * (s * s) ** 2 * c for s, c, d in zip(grids, widths, depths))
    return [
        ["Swin: window vs global interactions at N = 196, M = 7", "M^2 N / N^2 = 1/4", f"1/{196 // 49}",
         "closed form (prop. 3.5.2)"],
        ["Swin: at N = 3136 (stage 1 of Swin-T at 224)", "about 1/64", f"1/{3136 // 49}", "closed form"],
        ["Swin-T at 224: counted windowed attention matmuls vs global", "-",
         f"{swin['attn_macs'] / 1e6:,.1f} M vs {global_macs / 1e6:,.1f} M (1/{global_macs / swin['attn_macs']:.1f})",
         "ours: counted W-MSA QK^T + AV against 2(hw)^2 C per block on each stage's full grid"],
    ]


def textbook_table(cost: list[dict]) -> str:
    return markdown(["check", "seed notes", "ours", "why they differ"], textbook_rows(cost))
