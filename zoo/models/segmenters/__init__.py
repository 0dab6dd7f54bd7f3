"""Whole semantic segmenters on a zoo backbone, for counting (upernet.py; its heads: heads.py), the segmenters
as data (specs.py) and the published ADE20K tables (published.py). Names load on first use (PEP 562, through
lazy_loader): the data modules need no torch."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "specs": ["SEGMENTERS", "SegmenterSpec", "vit_levels"],
    "published": ["ADE20K", "PublishedRow", "published_row", "task_fields"],
    "upernet": ["PARTS", "UperNet", "create_segmenter", "segmenter_fields"],
})
