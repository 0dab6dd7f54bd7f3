"""Other libraries' logging is captured while archzoo's own lines reach stderr; --verbose shows it all;
a real ONNX export's chatter stays off stderr and is kept beside the rows."""
import json
import logging

import pytest

from analysis.timing.log_capture import captured_logging
from cli import run_cli


def test_foreign_records_are_captured_and_archzoo_lines_still_shown(caplog):
    shown = []
    handler = logging.Handler()
    handler.emit = lambda record: shown.append(record.name)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with captured_logging() as log:
            logging.getLogger("onnxscript.optimizer").info("folded 12 constants")
            logging.getLogger("zoo.compare").warning("archzoo's own line")
        with captured_logging(verbose=True) as verbose_log:
            logging.getLogger("onnx_ir.passes").warning("shown with --verbose")
    finally:
        root.removeHandler(handler)
    assert "folded 12 constants" in log.getvalue() and "archzoo's own" not in log.getvalue()
    assert shown == ["zoo.compare", "onnx_ir.passes"] and verbose_log.getvalue() == ""


def test_onnxruntime_stderr_holds_archzoo_lines_only_and_the_log_is_kept(tmp_path, kept_peaks):
    pytest.importorskip("onnxruntime", reason='needs the onnx extra: pip install ".[onnx]"')
    result = run_cli("zoo.compare", "--models", "deit_ti", "--metrics", "throughput", "--backend", "onnxruntime",
                     "--device", "cpu", "--quick", "--resolutions", "32", "--format", "json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["onnx_matches_eager"]
    foreign = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith(
        ("measuring", "rows appended", "zoo.", "resume"))]
    assert len(foreign) <= 2, foreign
    logs = list((tmp_path / "results" / "logs").glob("deit_ti-32-b1-onnxruntime.log"))
    assert logs and logs[0].read_text().count("\n") > 5
