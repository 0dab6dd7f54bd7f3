"""Whole two-stage detectors on a zoo backbone, for counting (two_stage.py; their heads: heads.py), the detectors
as data (specs.py) and the published figures (published.py). Names load on first use (PEP 562): the data
modules need neither torch nor torchvision."""
import importlib

_LAZY = {  # public name -> the submodule that defines it
    **dict.fromkeys(["CONVNEXT_CONFIGS", "DETECTORS", "DetectorSpec"], ".specs"),
    **dict.fromkeys(["PARTS", "PYRAMID_STRIDES", "TwoStageDetector", "create_detector", "detector_fields",
                     "roi_align_macs_2x2"], ".two_stage"),
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'zoo.models.detectors' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
