"""Three published throughput tables that are fit sources of archzoo's GPU calibration beside timm's and NVIDIA's
(benchmarks/fit_sources.py): the Swin README, pycls' model zoo and the ConvNeXt paper; each figure as its source
states it, with repository, commit, file, line and the recipe it was measured with.

Counted as the table's code ran them: the Swin repository's own models write attention out (q @ k^T, softmax,
@ v: no fused SDPA), so their timm counterparts are counted with timm's fused attention off
(timm.layers.set_fused_attn(False)). ResMLP-B24 (line 150: 116M parameters, 23.0 GFLOPs) has no timm
counterpart (timm's resmlp_big_24_224 is B24/8) and is left out.
"""
from __future__ import annotations

SWIN = "microsoft/Swin-Transformer@f82860bfb5225915aca09c3227159ee9e1df874d README.md"
SWIN_RECIPE = ("the repository's main.py --throughput (get_started.md: --batch-size 64 --throughput --disable_amp, "
               "so fp32, batch 64; 50 warm-up and 30 timed forwards); the GPU is not named in the repository: "
               "V100, as the Swin paper's Table 1 says (the paper itself not opened here)")

PYCLS = "facebookresearch/pycls@5719de641657c251f807c20a1fcf8ef6f4b60144 MODEL_ZOO.md"
PYCLS_RECIPE = ("'Inference times are reported for processing 64 images on 1 GPU', a Tesla V100 16GB, PyTorch 1.6, "
                "CUDA 10.0, cuDNN 7.6 (MODEL_ZOO.md, Experimental Settings); fp32 (pycls/core/config.py: "
                "TRAIN.MIXED_PRECISION = False, CUDNN.BENCHMARK = True); each EfficientNet at its TRAIN.IM_SIZE "
                "(configs/dds_baselines/effnet/EN-B*_dds_8gpu.yaml), which pycls/core/benchmark.py times at. pycls's own "
                "models, counted as timm's ports of them (timm's regnet* load pycls's weights; its ResNets put the "
                "stride in the 3x3 conv, pycls's in the 1x1); ResNeXt-152 has no timm counterpart")

CONVNEXT = ("arXiv:2201.03545 (Liu et al., A ConvNet for the 2020s, v2), as ar5iv renders it "
            "(https://ar5iv.labs.arxiv.org/html/2201.03545, the copy held by the search index, opened Dec 2026)")
CONVNEXT_RECIPE = ("'Inference throughput is measured on a V100 GPU, following [45]' (Table 1's caption; [45] is Swin): "
                   "no batch or precision is stated, so Swin's recipe (main.py --throughput, batch 64, no autocast: "
                   "fp32; a V100 has no TF32); 2021 PyTorch (no fused SDPA: attention written out). Each row's model "
                   "as timm names it (timm's convnext_* port the official models; EffNet-B7 and EffNetV2 as the "
                   "TF-ported tf_* weights the figures' accuracies are those of). RegNetY-16G (334.7) and EffNet-B7 "
                   "(55.1) are the figures Swin's own Table 1 prints, likely copied, not remeasured. The isotropic "
                   "ConvNeXts of Table 2 have no timm counterpart and are left out; Table 1's repeated rows "
                   "(ImageNet-22K part, same figure) once. Each counterpart's MACs, counted on meta, are within 1% "
                   "of the table's FLOPs column (MACs) but EffNetV2-L's (56.1 G counted at 480 px, +6% on 53.0) "
                   "and EffNetV2-XL's (82.1 G, -13% on 94.0)")
CONVNEXT_A100_RECIPE = ("Appendix E: an A100, PyTorch 1.10, TF32 and the channels-last memory layout (Table 12's "
                        "caption); torch 1.10 ran both cuDNN and cuBLAS on TF32 by default (--tf32 on); no batch "
                        "stated: 64 as for Table 1; which A100 (40 or 80 GB) is not stated: the 80 GB SXM sheet")
_T1, _T1K = "Table 1 (ImageNet-1K part) row", "Table 1 (ImageNet-22K part) row"

# per table: the GPU, dtype, tf32 mode and attention path it ran, the figure's unit ("img/s" or "ms" per batch),
# and its rows: (model as timm names it, image size, batch, the published figure, its line in the source
# or, for a paper, its table and row)
TABLES = {
    "pycls model zoo (V100 16GB, fp32, batch 64)": {
        "device": "V100", "dtype": "fp32", "tf32": None, "fused_attention": True, "source": PYCLS,
        "recipe": PYCLS_RECIPE, "unit": "ms", "channels_last": False,
        "rows": [("regnetx_002", 224, 64, 11, 67), ("regnetx_004", 224, 64, 15, 80), ("regnetx_006", 224, 64, 18, 93),
                 ("regnetx_008", 224, 64, 23, 106), ("regnetx_016", 224, 64, 35, 119), ("regnetx_032", 224, 64, 59, 132),
                 ("regnetx_040", 224, 64, 74, 145), ("regnetx_064", 224, 64, 95, 158), ("regnetx_080", 224, 64, 97, 171),
                 ("regnetx_120", 224, 64, 142, 184), ("regnetx_160", 224, 64, 171, 197),
                 ("regnetx_320", 224, 64, 337, 210),
                 ("regnety_002", 224, 64, 12, 242), ("regnety_004", 224, 64, 19, 255), ("regnety_006", 224, 64, 20, 268),
                 ("regnety_008", 224, 64, 23, 281), ("regnety_016", 224, 64, 41, 294), ("regnety_032", 224, 64, 69, 307),
                 ("regnety_040", 224, 64, 69, 320), ("regnety_064", 224, 64, 108, 333),
                 ("regnety_080", 224, 64, 115, 346), ("regnety_120", 224, 64, 152, 359),
                 ("regnety_160", 224, 64, 208, 372), ("regnety_320", 224, 64, 331, 385),
                 ("resnet50", 224, 64, 57, 417), ("resnet101", 224, 64, 97, 430), ("resnet152", 224, 64, 140, 443),
                 ("resnext50_32x4d", 224, 64, 85, 475), ("resnext101_32x4d", 224, 64, 151, 488),
                 ("efficientnet_b0", 224, 64, 31, 533), ("efficientnet_b1", 240, 64, 47, 546),
                 ("efficientnet_b2", 260, 64, 58, 559), ("efficientnet_b3", 300, 64, 92, 572),
                 ("efficientnet_b4", 380, 64, 201, 585), ("efficientnet_b5", 456, 64, 446, 598)],
    },
    "Swin README (V100, fp32, batch 64)": {
        "device": "V100", "dtype": "fp32", "tf32": None, "fused_attention": False, "source": SWIN,
        "recipe": SWIN_RECIPE, "unit": "img/s", "channels_last": False,
        "rows": [("swin_tiny_patch4_window7_224", 224, 64, 755, 114), ("swin_small_patch4_window7_224", 224, 64, 437, 115),
                 ("swin_base_patch4_window7_224", 224, 64, 278, 116), ("swin_base_patch4_window12_384", 384, 64, 85, 117),
                 ("swinv2_tiny_window8_256", 256, 64, 572, 129), ("swinv2_small_window8_256", 256, 64, 327, 130),
                 ("swinv2_base_window8_256", 256, 64, 217, 131), ("swinv2_tiny_window16_256", 256, 64, 437, 132),
                 ("swinv2_small_window16_256", 256, 64, 257, 133), ("swinv2_base_window16_256", 256, 64, 174, 134),
                 ("resmlp_24_224", 224, 64, 715, 149)],
    },
    "ConvNeXt paper, Tables 1-2 (V100, fp32, batch 64)": {
        "device": "V100", "dtype": "fp32", "tf32": None, "fused_attention": False, "source": CONVNEXT,
        "recipe": CONVNEXT_RECIPE, "unit": "img/s", "channels_last": False,
        "rows": [("regnety_160", 224, 64, 334.7, f"{_T1} RegNetY-16G 224"),
                 ("tf_efficientnet_b7", 600, 64, 55.1, f"{_T1} EffNet-B7 600"),
                 ("tf_efficientnetv2_l", 480, 64, 83.7, f"{_T1} EffNetV2-L 480"),
                 ("deit_small_patch16_224", 224, 64, 978.5, f"{_T1} DeiT-S 224"),
                 ("deit_base_patch16_224", 224, 64, 302.1, f"{_T1} DeiT-B 224"),
                 ("swin_tiny_patch4_window7_224", 224, 64, 757.9, f"{_T1} Swin-T 224"),
                 ("convnext_tiny", 224, 64, 774.7, f"{_T1} ConvNeXt-T 224"),
                 ("swin_small_patch4_window7_224", 224, 64, 436.7, f"{_T1} Swin-S 224"),
                 ("convnext_small", 224, 64, 447.1, f"{_T1} ConvNeXt-S 224"),
                 ("swin_base_patch4_window7_224", 224, 64, 286.6, f"{_T1} Swin-B 224"),
                 ("convnext_base", 224, 64, 292.1, f"{_T1} ConvNeXt-B 224"),
                 ("swin_base_patch4_window12_384", 384, 64, 85.1, f"{_T1} Swin-B 384"),
                 ("convnext_base", 384, 64, 95.7, f"{_T1} ConvNeXt-B 384"),
                 ("convnext_large", 224, 64, 146.8, f"{_T1} ConvNeXt-L 224"),
                 ("convnext_large", 384, 64, 50.4, f"{_T1} ConvNeXt-L 384"),
                 ("tf_efficientnetv2_xl", 480, 64, 56.5, f"{_T1K} EffNetV2-XL 480"),
                 ("vit_base_patch16_384", 384, 64, 93.1, f"{_T1K} ViT-B/16 384"),
                 ("vit_large_patch16_384", 384, 64, 28.5, f"{_T1K} ViT-L/16 384"),
                 ("convnext_tiny", 384, 64, 282.8, f"{_T1K} ConvNeXt-T 384"),
                 ("convnext_small", 384, 64, 163.5, f"{_T1K} ConvNeXt-S 384"),
                 ("swin_large_patch4_window7_224", 224, 64, 145.0, f"{_T1K} Swin-L 224"),
                 ("swin_large_patch4_window12_384", 384, 64, 46.0, f"{_T1K} Swin-L 384"),
                 ("convnext_xlarge", 224, 64, 89.3, f"{_T1K} ConvNeXt-XL 224"),
                 ("convnext_xlarge", 384, 64, 30.2, f"{_T1K} ConvNeXt-XL 384"),
                 ("vit_large_patch16_224", 224, 64, 93.1, "Table 2 row ViT-L (224)")],
    },
    "ConvNeXt paper, Table 12 (A100, TF32, channels-last)": {
        "device": "A100", "dtype": "fp32", "tf32": "on", "fused_attention": False, "source": CONVNEXT,
        "recipe": CONVNEXT_A100_RECIPE, "unit": "img/s", "channels_last": True,
        "rows": [("swin_tiny_patch4_window7_224", 224, 64, 1325.6, "Table 12 row Swin-T 224"),
                 ("convnext_tiny", 224, 64, 1943.5, "Table 12 row ConvNeXt-T 224"),
                 ("swin_small_patch4_window7_224", 224, 64, 857.3, "Table 12 row Swin-S 224"),
                 ("convnext_small", 224, 64, 1275.3, "Table 12 row ConvNeXt-S 224"),
                 ("swin_base_patch4_window7_224", 224, 64, 662.8, "Table 12 row Swin-B 224"),
                 ("convnext_base", 224, 64, 969.0, "Table 12 row ConvNeXt-B 224"),
                 ("swin_base_patch4_window12_384", 384, 64, 242.5, "Table 12 row Swin-B 384"),
                 ("convnext_base", 384, 64, 336.6, "Table 12 row ConvNeXt-B 384"),
                 ("swin_large_patch4_window7_224", 224, 64, 435.9, "Table 12 row Swin-L 224"),
                 ("convnext_large", 224, 64, 611.5, "Table 12 row ConvNeXt-L 224"),
                 ("swin_large_patch4_window12_384", 384, 64, 157.9, "Table 12 row Swin-L 384"),
                 ("convnext_large", 384, 64, 211.4, "Table 12 row ConvNeXt-L 384"),
                 ("convnext_xlarge", 224, 64, 424.4, "Table 12 row ConvNeXt-XL 224"),
                 ("convnext_xlarge", 384, 64, 147.4, "Table 12 row ConvNeXt-XL 384")],
    },
}

