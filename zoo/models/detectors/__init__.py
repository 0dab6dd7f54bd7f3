"""Whole two-stage detectors on a zoo backbone, for counting (two_stage.py; their heads: heads.py), the detectors
as data (specs.py) and the published figures (published.py). Names load on first use (PEP 562, through
lazy_loader): the data modules need neither torch nor torchvision."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "specs": ["ALIASES", "CONVNEXT_CONFIGS", "DETECTOR_NAMES", "DETECTORS", "DetectorSpec", "resolve_detector"],
    "two_stage": ["PARTS", "PYRAMID_STRIDES", "TwoStageDetector", "create_detector", "detector_fields",
                  "roi_align_macs_2x2"],
})
