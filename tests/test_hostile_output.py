"""What archzoo prints and stores for odd requests: skipped rows stored and listed by the report, CSV keeping
list fields as JSON text, strict JSON on stdout, zoo.select --resolution taking exactly one size."""
import contextlib
import csv
import io
import json
import math

import pytest

from zoo import compare, select
from zoo.compare.display import to_csv, to_json
from zoo.console.markdown import markdown_table
from zoo.report.build import build_reports
from zoo.store.store import ResultStore


def _run(main, *argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_size_rule_skip_is_stored_and_listed_in_not_measured(tmp_path):
    # 40 px: ViT-Ti/16 needs a multiple of its 16 px patch (skipped); ConvNeXt takes any side from 32
    code, _, err = _run(compare.main, "--models", "vit_ti16,convnext_t", "--metrics", "cost", "--resolutions", "40",
                        "--features", "--out", str(tmp_path))
    assert code == 0, err
    stored = ResultStore(tmp_path).rows()
    assert [(r["model"], bool(r.get("skipped"))) for r in stored] == [("vit_ti16", True), ("convnext_t", False)]
    build_reports(tmp_path)
    listed = (tmp_path / "reports" / "not_measured.md").read_text()
    assert "| vit_ti16 | 40 |" in listed and "skipped: vit_ti16 cannot take 40 px: the side must be a multiple of 16" in listed


def test_csv_keeps_list_fields_as_json_text(tmp_path):
    code, out, err = _run(compare.main, "--models", "convnext_t", "--metrics", "cost", "--resolutions", "64",
                          "--features", "--format", "csv", "--no-save")
    assert code == 0, err
    record = next(csv.DictReader(io.StringIO(out)))
    # timm's ConvNeXt-T stages: 96, 192, 384, 768 channels at strides 4, 8, 16, 32
    assert json.loads(record["features"]) == [[96, 16, 16], [192, 8, 8], [384, 4, 4], [768, 2, 2]]


def test_stdout_json_is_strict_even_for_non_finite_numbers():
    records = [{"model": "m", "imgs_per_s": math.nan, "latencies_ms": [1.0, math.inf]}]
    text = to_json(records)
    parsed = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))
    assert parsed == [{"model": "m", "imgs_per_s": None, "latencies_ms": [1.0, None]}]
    assert "NaN" not in to_csv(records).split("\n")[0]


@pytest.mark.parametrize("value, message", [
    ("224,384", "--resolution: one side or HEIGHTxWIDTH (800x1344), not a list ('224,384')"),
    ("0", "--resolution: 0 is not positive"),
    ("224x0", "--resolution: 0 is not positive"),
    ("", "--resolution: one side or HEIGHTxWIDTH"),
])
def test_select_resolution_takes_one_size_and_names_the_option_typed(value, message):
    code, out, err = _run(select.main, "--resolution", value, "--max-gmacs", "5", "--no-save")
    assert code == 2 and out == "" and err.strip().startswith(f"zoo.select: error: {message}"), err
    assert "--resolutions" not in err


def test_select_resolution_takes_h_x_w():
    code, out, err = _run(select.main, "--resolution", "800x1344", "--models", "convnext_t", "--format", "json",
                          "--no-save")
    assert code == 0, err
    assert json.loads(out)["query"]["resolution"] == [800, 1344]


def test_markdown_cells_show_html_as_text_and_keep_the_row_whole():
    """HTML's three reserved characters as entities (&amp; first, so an entity is not escaped twice), a line
    break as a space, "|" escaped so the cell cannot split the row (GitHub-flavoured markdown tables)."""
    table = markdown_table(["cpu_model"], [["AT&T <script>\nx|y"], [None]])
    assert table.splitlines()[2:] == ["| AT&amp;T &lt;script&gt; x\\|y |", "| - |"]

