"""The torch release a prediction is for (`--torch X.Y`, default the installed one) and the attention path it runs
(`--attention fused|unfused`, default as that release runs timm's models: fused SDPA from torch 2.0, op by op
before). The factors of each release are analysis.predict.calibration's (fitted on timm's tables of torch 1.10 to
2.9); a release between two fitted ones takes the earlier one's, one before 1.10 takes 1.10's (an extrapolation the
row says), one after 2.9 takes 2.9's."""
from __future__ import annotations

from analysis.predict.calibration import VERSIONS, release, version_of

ATTENTION = ("fused", "unfused")
FUSED_FROM = (2, 0)            # torch.nn.functional.scaled_dot_product_attention, which timm's models call since


def installed() -> tuple[int, int]:
    from analysis.timing.fingerprint import torch_version

    return version_of(torch_version())


def attention_of(torch: tuple[int, int], asked: str | None = None) -> str:
    """The attention path: as asked, else fused from torch 2.0 and unfused before."""
    return asked or ("fused" if torch >= FUSED_FROM else "unfused")


def torch_label(torch: tuple[int, int]) -> str:
    """"2.14 (the factors of 2.9)": the release asked and, where it differs, the fitted one it takes."""
    asked, fitted = ".".join(map(str, torch)), ".".join(map(str, release(torch)))
    if torch < VERSIONS[0]:
        return f"{asked} (the factors of {fitted}, the earliest fitted: an extrapolation)"
    return asked if asked == fitted else f"{asked} (the factors of {fitted})"
