"""The one formatter of each unit the tables show (zoo.markdown): MiB, MFU, feature maps, by hand."""
from zoo.console.markdown import feature_maps, mfu_cell, mib


def test_mib_is_two_to_the_twenty_bytes_to_one_decimal():
    assert mib(1536 * 1024 * 1024) == "1,536.0" and mib(3 * 2**19) == "1.5" and mib(0) == "0.0"
    assert mib(None) is None


def test_mfu_as_a_percentage_marked_above_peak_or_without_a_fast_gemm():
    assert mfu_cell({"mfu": 0.4567}) == "45.7"
    assert mfu_cell({"mfu": 0.4567}, digits=0, unit="%") == "46%"
    assert mfu_cell({"train_mfu": 1.25, "train_mfu_above_peak": True}, "train_") == "125.0 (above peak)"
    assert mfu_cell({"mfu": None, "peak_fast_gemm": False}) == "no fast GEMM"
    assert mfu_cell({"mfu": 0.5}, "train_") is None and mfu_cell({}) is None


def test_feature_maps_with_their_strides_from_the_input_height():
    maps = [[96, 56, 56], [768, 7, 7]]        # a 224 px input: strides 224 / 56 and 224 / 7
    assert feature_maps(maps) == "[96,56,56] [768,7,7]"
    assert feature_maps(maps, 224) == "[96,56,56]/4 [768,7,7]/32"
    assert feature_maps([[256, 200, 336]], 800) == "[256,200,336]/4" and feature_maps([]) is None
