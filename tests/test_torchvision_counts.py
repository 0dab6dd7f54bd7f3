"""Our counts against an independent published source: torchvision's weight metadata.

torchvision lists, for each checkpoint, `num_params` and `_ops` (GMACs per image, despite the
"GFLOPS" heading of its docs) measured with its own tooling. The architectures are the same as
timm's and ours for these models, so counts must agree: params exactly, MACs to the published
three decimals. No weights are downloaded; only the metadata is read.
"""
import pytest
import torchvision.models as tvm

from zoo_cost import cost_of

PUBLISHED = [  # (registry name, resolution, torchvision weights enum)
    ("vit_b16", 224, tvm.ViT_B_16_Weights.IMAGENET1K_V1),
    ("vit_b32", 224, tvm.ViT_B_32_Weights.IMAGENET1K_V1),
    ("vit_l16", 224, tvm.ViT_L_16_Weights.IMAGENET1K_V1),
    ("vit_l32", 224, tvm.ViT_L_32_Weights.IMAGENET1K_V1),
    ("vit_h14", 518, tvm.ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1),
    ("resnet50", 224, tvm.ResNet50_Weights.IMAGENET1K_V1),
    ("convnext_t", 224, tvm.ConvNeXt_Tiny_Weights.IMAGENET1K_V1),
    ("convnext_l", 224, tvm.ConvNeXt_Large_Weights.IMAGENET1K_V1),
    ("swin_t", 224, tvm.Swin_T_Weights.IMAGENET1K_V1),
    ("swin_b", 224, tvm.Swin_B_Weights.IMAGENET1K_V1),
    ("regnety_160", 224, tvm.RegNet_Y_16GF_Weights.IMAGENET1K_V1),
]


@pytest.mark.parametrize("name, img_size, weights", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_counts_match_torchvisions_published_metadata(name, img_size, weights):
    record = cost_of(name, img_size=img_size, train=False)
    assert record["params"] == weights.meta["num_params"]
    assert round(record["macs"] / 1e9, 3) == pytest.approx(weights.meta["_ops"], abs=1e-9)
    assert record["uncounted_ops"] == []
