"""For tests about drawing itself: every figure drawn from here on is drawn, none taken from what this process drew
before (zoo.report.redraw.DRAWN_IN_PROCESS)."""
from zoo.report import redraw


def draw_afresh(patch) -> None:
    """Within `patch` (a pytest MonkeyPatch): the reuse of figures drawn before in this process off, and emptied."""
    patch.setattr(redraw, "DRAWN_IN_PROCESS", type(redraw.DRAWN_IN_PROCESS)())
    patch.setattr(redraw, "DRAWN_IN_PROCESS_MAX", 0)
