"""Issue 54: the report reads rows one by one. A stored row it cannot use (a detector head archzoo does not build, a
predicted row with 0 or negative img/s or without source, dtype or device_memory_bytes, a damaged line) is named
(file, line, why) and skipped, every other row is shown; `--refresh` never drops a line a user may own."""
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_rows import rows as schema_rows
from zoo.models.detectors.specs import DETECTOR_NAMES
from zoo.report import build, gpu_predictions, predicted_gpu, views
from zoo.report.build import build_reports, sections
from zoo.report.gpu_predictions import PredictionsError, read_predicted_file, write_predictions
from zoo.report.rows import ReportRows, load
from zoo.store.store import ResultStore

MODEL = "vit_b16"


@pytest.fixture(scope="module")
def predicted(committed) -> list[dict]:
    """The committed predicted rows of one model: 5 devices x 2 batches."""
    lines = (committed / "results" / "predicted.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines if json.loads(line)["model"] == MODEL]
    assert len(found) == 10
    return found


def _write(folder: Path, rows: list, name: str = "predicted.jsonl") -> Path:
    (folder / "results").mkdir(exist_ok=True)
    path = folder / "results" / name
    path.write_bytes(b"".join(r if isinstance(r, bytes) else (json.dumps(r) + "\n").encode() for r in rows))
    return path


def _table_rows(markdown: str) -> int:
    return sum(1 for line in markdown.splitlines() if line.startswith("| ")) - 1


def _without(row: dict, key: str) -> dict:
    return {k: v for k, v in row.items() if k != key}


BROKEN = {   # the cases: each once crashed the report (ZeroDivisionError, KeyError) or printed a figure
    "zero img/s": (lambda r: {**r, "imgs_per_s": 0.0}, "imgs_per_s is 0.0, not above 0"),
    "negative img/s": (lambda r: {**r, "imgs_per_s": -5.0}, "imgs_per_s is -5.0, not above 0"),
    "negative p10": (lambda r: {**r, "imgs_per_s_p10": -1.0}, "imgs_per_s_p10 is -1.0, not above 0"),
    "no source": (lambda r: _without(r, "source"), "lacks source"),
    "no dtype": (lambda r: _without(r, "dtype"), "lacks dtype"),
    "empty dtype": (lambda r: {**r, "dtype": " "}, "dtype is empty"),
    "no device memory": (lambda r: _without(r, "device_memory_bytes"), "device_memory_bytes is absent"),
    "a damaged line": (lambda r: json.dumps(r)[:40].encode() + b"\n", "not JSON"),
    "not UTF-8": (lambda r: b'{"device": "\xff"}\n', "not UTF-8 text"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_predicted_row_it_cannot_use_is_named_and_the_rest_shown(tmp_path, predicted, case):
    damage, why = BROKEN[case]
    path = _write(tmp_path, [damage(predicted[0]), *predicted[1:]])
    data = load(tmp_path)
    assert len(data.predicted) == 9 and data.predicted_problem is None
    ((bad),) = data.predicted_bad_lines
    assert (bad.path, bad.number) == (path, 1) and why in bad.reason
    section = sections(data)["predicted_gpu.md"]
    shown = section.markdown()
    assert _table_rows(shown) == 9 and f"{path}:1: {why}" in shown       # file, line and why, in the report
    assert len(views.gpu_rows(data)) == 9


def test_a_detector_row_with_an_unknown_head_is_named_and_the_rest_shown(tmp_path, committed):
    lines = (committed / "results" / "cost.jsonl").read_text().splitlines()
    detectors = [json.loads(line) for line in lines if json.loads(line)["settings"].get("detector")][:3]
    strange = {**detectors[0], "settings": {**detectors[0]["settings"], "detector": "yolo_v99"}}
    path = _write(tmp_path, [detectors[0], strange, *detectors[1:]], "cost.jsonl")
    data = load(tmp_path)
    assert len(data.detectors) == 3                  # the detector table reads these: the strange one is not there
    assert [(b.path, b.number) for b in data.bad_lines] == [(path, 2)]
    assert "detector 'yolo_v99' is none archzoo builds" in data.bad_lines[0].reason
    build_reports(tmp_path, pictures=False)
    assert f"{path}:2: detector 'yolo_v99'" in (tmp_path / "reports" / "not_measured.md").read_text()
    assert _table_rows((tmp_path / "reports" / "detectors.md").read_text().split("### ")[0]) == 3


@st.composite
def _detector_rows(draw):
    row = draw(schema_rows("cost"))
    head = draw(st.sampled_from([*DETECTOR_NAMES, "yolo_v99", ""]))
    return {**row, "settings": {**row["settings"], "detector": head}}


@pytest.fixture
def _tables_only(monkeypatch):
    """The sections' tables and plots' data are what is read; the worked answers and page are not (as in
    test_hostile_readers.py)."""
    monkeypatch.setattr(build, "choosing_markdown", lambda *a, **k: "")
    monkeypatch.setattr(build, "page", lambda *a, **k: "")


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_detector_rows(), min_size=1, max_size=4))
def test_generated_detector_rows_never_stop_the_report(_tables_only, kept_peaks, generated):
    with tempfile.TemporaryDirectory() as d:
        store = ResultStore(d)
        for row in generated:
            store.append(row)
        build_reports(d, pictures=False)
        named = (Path(d) / "reports" / "not_measured.md").read_text()
        for head in {r["settings"]["detector"] for r in generated} - set(DETECTOR_NAMES):
            assert f"detector {head!r} is none archzoo builds" in named


def _damaged(row: dict):
    """One row damaged as a hand edit, a torn write or a hostile user would: a key dropped, a value out of range or
    of another type, or the line not JSON."""
    keys = st.sampled_from(sorted(row))
    values = st.sampled_from([0, 0.0, -1, -1.5, None, "", "fast", True, [], {}, 1e308, 2 ** 63 - 1])
    return st.one_of(
        keys.map(lambda k: _without(row, k)),
        st.tuples(keys, values).map(lambda kv: {**row, kv[0]: kv[1]}),
        st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ") + b"\n"),
        st.just(json.dumps(row)[:-5].encode() + b"\n"),
    )


@st.composite
def _lines(draw, predicted):
    """A predicted.jsonl of good rows, rows users saved and damaged lines, in any order."""
    chosen = []
    for row in draw(st.lists(st.sampled_from(predicted), min_size=1, max_size=6)):
        kind = draw(st.sampled_from(["good", "saved", "damaged", "damaged saved"]))
        row = {**row, "saved_by": "zoo.compare --predict"} if "saved" in kind else row
        chosen.append(draw(_damaged(row)) if "damaged" in kind else row)
    return chosen


def _as_line(item) -> bytes:
    return item if isinstance(item, bytes) else (json.dumps(item) + "\n").encode()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_predicted_line_is_a_shown_row_or_named_and_refresh_keeps_what_a_user_may_own(predicted, data):
    lines = data.draw(_lines(predicted))
    with tempfile.TemporaryDirectory() as d:
        path = _write(Path(d), lines)
        found = read_predicted_file(d)
        numbered = [n for n, raw in enumerate(path.read_bytes().split(b"\n"), 1) if raw.strip()]
        assert len(found.rows) + len(found.bad_lines) == len(numbered)         # each line shown or named
        assert {b.number for b in found.bad_lines} <= set(numbered) and all(b.reason for b in found.bad_lines)
        assert all(r["imgs_per_s"] > 0 and r["source"] and r["dtype"] for r in found.rows)
        # the section's writers and the GPU view read every row shown without an error
        rows = found.rows
        predicted_gpu.intro(rows), predicted_gpu.predicted_table(rows), predicted_gpu.sources(rows)
        views.gpu_rows(ReportRows(cost=[], cost_all=[], throughput=[], not_measured=[], predicted=rows))
        # --refresh (no model to predict here): the fixed set goes, every other line stays as it was
        write_predictions(d, [])
        after = path.read_bytes().split(b"\n")
        for item in lines:
            line = _as_line(item).rstrip(b"\n")
            try:
                row = json.loads(line.decode("utf-8"))
                fixed = isinstance(row, dict) and not row.get("saved_by")      # what --refresh writes anew
            except ValueError:
                fixed = False
            assert (line in after) != fixed or not line.strip(), line


def test_refresh_refuses_a_file_it_cannot_read_whole_and_writes_nothing(tmp_path, predicted, monkeypatch):
    path = _write(tmp_path, [{**predicted[0], "saved_by": "zoo.compare --predict"}, *predicted[1:]])
    before = path.read_bytes()
    monkeypatch.setattr(gpu_predictions, "MAX_BYTES", len(before) - 1)
    with pytest.raises(PredictionsError, match="over"):
        write_predictions(tmp_path, [])
    assert path.read_bytes() == before
    from zoo.report import deterministic

    monkeypatch.setattr(deterministic, "count_rows", lambda tasks: pytest.fail("counted before refusing"))
    with pytest.raises(PredictionsError):
        deterministic.refresh(tmp_path)
    assert path.read_bytes() == before
