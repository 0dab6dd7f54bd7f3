"""Other libraries' logging (torch's ONNX exporter, onnxscript's optimizer: ~300 lines a model) captured
while archzoo's own lines still reach stderr; the caller keeps the captured text (a file, or nothing).
"""
from __future__ import annotations

import contextlib
import io
import logging

OWN_LOGGERS = ("zoo", "analysis")


def _own(record: logging.LogRecord) -> bool:
    return record.name.split(".")[0] in OWN_LOGGERS


@contextlib.contextmanager
def captured_logging(verbose: bool = False):
    """Yields a StringIO that receives every other library's log record (INFO and up) during the block;
    the root logger's handlers see only archzoo's own. verbose=True captures nothing: all reach stderr."""
    buffer = io.StringIO()
    if verbose:
        yield buffer
        return
    root = logging.getLogger()
    capture = logging.StreamHandler(buffer)
    capture.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    capture.addFilter(lambda r: not _own(r))
    handlers, level = list(root.handlers), root.level
    for handler in handlers:
        handler.addFilter(_own)
    root.addHandler(capture)
    root.setLevel(min(level, logging.INFO) if level else logging.INFO)
    try:
        yield buffer
    finally:
        root.removeHandler(capture)
        root.setLevel(level)
        for handler in handlers:
            handler.removeFilter(_own)
