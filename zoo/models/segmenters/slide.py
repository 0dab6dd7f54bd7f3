"""mmsegmentation's sliding-window test (mmseg/models/segmentors/encoder_decoder.py, `slide_inference`): windows
of crop x crop px every stride px, the last one moved back to end flush with the image's edge, each window run
through the whole segmenter; an image smaller than the crop is run as one window of its own size."""
from __future__ import annotations


def grid(side: int, crop: int, stride: int) -> int:
    """Windows along one side: mmseg's h_grids = max(h_img - h_crop + h_stride - 1, 0) // h_stride + 1."""
    return max(side - crop + stride - 1, 0) // stride + 1


def windows(height: int, width: int, crop: int, stride: int) -> list[tuple[int, int, int, int]]:
    """Every window as (y1, y2, x1, x2), in mmseg's order and arithmetic."""
    out = []
    for h_idx in range(grid(height, crop, stride)):
        for w_idx in range(grid(width, crop, stride)):
            y2, x2 = min(h_idx * stride + crop, height), min(w_idx * stride + crop, width)
            out.append((max(y2 - crop, 0), y2, max(x2 - crop, 0), x2))
    return out


def check_slide(crop: int, stride: int) -> str | None:
    """Why (crop, stride) is no slide test, or None. A stride past the crop leaves pixels no window covers
    (mmseg asserts every pixel is counted at least once)."""
    if stride > crop:
        return f"stride {stride} is larger than the crop {crop}: pixels between windows would get no prediction"
    return None
