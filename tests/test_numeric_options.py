"""One parser and one table of bounds for every numeric option (issue 54): integer options took full-width digits
('８') and underscores ('1_281_167') where sizes refused them, --epochs 1e-300 was accepted, and a batch had two
bounds (65,536 in zoo.select --predict --metrics train, 2^20 elsewhere). Hypothesis checks the parser against
Python's own reading of the text it accepts; every option in the table is refused the same way on the command
line of each command that takes it."""
import json
import math
import re
from pathlib import Path

import pytest
from cli import call_main
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.errors import UsageError
from zoo.options.values import BOUNDS, INT64_MAX, bounds_table, number, shown
from zoo.store.schema import MAX_COUNT

ROOT = Path(__file__).resolve().parents[1]
PREDICT, TRAIN = ["--predict", "H100"], ["--predict", "H100", "--metrics", "train"]
SCHEDULE = ["--epochs", "1", "--train-images", "1281167"]
# every command line that takes each option: (module, the other arguments); X is the value under test
WHERE = {
    "resolutions": [("zoo.compare", ["--models", "deit_ti", "--resolutions", "X"])],
    "resolution": [("zoo.select", ["--resolution", "X"]), ("zoo.select", [*PREDICT, "--resolution", "X"]),
                   ("zoo.select", [*TRAIN, "--resolution", "X"])],
    "pad-to": [("zoo.compare", ["--models", "deit_ti", "--pad-to", "X"]), ("zoo.select", ["--pad-to", "X"])],
    "slide": [("zoo.compare", ["--models", "convnext_t", "--segmenter", "upernet", "--metrics", "cost",
                               "--slide", "X,341"])],
    "batch-sizes": [("zoo.compare", ["--models", "deit_ti", "--batch-sizes", "X"]),
                    ("zoo.compare", ["--models", "deit_ti", *TRAIN, "--batch-sizes", "X"])],
    "batch-size": [("zoo.select", ["--batch-size", "X"]), ("zoo.select", [*PREDICT, "--batch-size", "X"]),
                   ("zoo.select", [*TRAIN, "--batch-size", "X"])],
    "iters": [("zoo.compare", ["--models", "deit_ti", "--metrics", "throughput", "--iters", "X"]),
              ("zoo.select", ["--max-latency-ms", "9", "--iters", "X"])],
    "threads": [("zoo.compare", ["--models", "deit_ti", "--metrics", "throughput", "--threads", "X"])],
    "gpus": [("zoo.compare", ["--models", "deit_ti", *TRAIN, "--gpus", "X"]), ("zoo.select", [*TRAIN, "--gpus", "X"])],
    "frozen-stages": [("zoo.compare", ["--models", "convnext_t", "--features", "--frozen-stages", "X"]),
                      ("zoo.select", ["--features", "--frozen-stages", "X"])],
    "train-images": [("zoo.compare", ["--models", "deit_ti", *TRAIN, "--epochs", "1", "--train-images", "X"]),
                     ("zoo.select", [*TRAIN, "--epochs", "1", "--train-images", "X"])],
    "min-seconds": [("zoo.compare", ["--models", "deit_ti", "--metrics", "throughput", "--min-seconds", "X"])],
    "budget-s": [("zoo.select", ["--budget-s", "X"])],
    "wait-quiet": [("zoo.select", ["--wait-quiet", "X"])],
    "latency-target-ms": [("zoo.compare", ["--models", "deit_ti", "--metrics", "throughput", "--batch-sizes",
                                           "sweep", "--latency-target-ms", "X"])],
    "max-latency-ms": [("zoo.select", ["--max-latency-ms", "X"]), ("zoo.select", [*PREDICT, "--max-latency-ms", "X"])],
    "min-imgs-per-s": [("zoo.select", ["--min-imgs-per-s", "X"]), ("zoo.select", [*PREDICT, "--min-imgs-per-s", "X"])],
    **{c: [("zoo.select", [f"--{c}", "X"])] for c in ("max-gmacs", "max-params", "max-act-mib", "max-serve-mib",
                                                       "max-train-mib", "min-top1")},
    "price-per-hour": [("zoo.compare", ["--models", "deit_ti", *PREDICT, "--price-per-hour", "X"]),
                       ("zoo.select", [*PREDICT, "--price-per-hour", "X"]),
                       ("zoo.select", [*TRAIN, "--price-per-hour", "X"])],
    "epochs": [("zoo.compare", ["--models", "deit_ti", *TRAIN, "--epochs", "X", "--train-images", "1281167"]),
               ("zoo.select", [*TRAIN, "--epochs", "X", "--train-images", "1281167"])],
    "max-train-hours": [("zoo.select", [*TRAIN, *SCHEDULE, "--max-train-hours", "X"])],
}
CASES = [(option, module, args) for option, places in WHERE.items() for module, args in places]


def past(option: str) -> str:
    """A value just past the option's upper bound, as a user would type it."""
    bound = BOUNDS[option]
    return str(int(bound.high) + 1) if bound.whole else repr(bound.high * 1.5)


def test_every_option_in_the_table_is_tried_on_every_command_line_that_takes_it():
    assert set(WHERE) == set(BOUNDS)


@pytest.mark.parametrize("value", ["８", "1_0", "past"])
@pytest.mark.parametrize("option, module, args", CASES, ids=[f"{m} {o} {i}" for i, (o, m, _) in enumerate(CASES)])
def test_a_digit_of_another_script_a_separator_or_a_value_past_the_bound_is_one_line_naming_it(
        tmp_path, monkeypatch, option, module, args, value):
    monkeypatch.setenv("ARCHZOO_DATA_DIR", str(tmp_path / "data"))
    typed = past(option) if value == "past" else value
    done = call_main(module, *[a.replace("X", typed) for a in args])
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and f"error: --{option}" in done.stderr, done.stderr
    if value == "past":
        assert shown(BOUNDS[option].high) in done.stderr
    assert not (tmp_path / "data").exists()


TEXT = st.text(alphabet=st.sampled_from(list("0123456789+-.eE_ x") + ["８", "٣", "\u00a0", "1"]), max_size=12)


@settings(max_examples=400, deadline=None)
@given(option=st.sampled_from(sorted(BOUNDS)), text=TEXT | st.from_regex(r"[+-]?[0-9]{1,25}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,4})?", fullmatch=True))
def test_the_parser_takes_exactly_ascii_numbers_within_the_bound(option, text):
    """Accepted: what Python reads from the same ASCII text, within the bound. Refused: one line naming the option;
    never another exception. Never accepted: a digit of another script, an underscore."""
    bound = BOUNDS[option]
    try:
        value = number(text, option)
    except UsageError as e:
        assert str(e).startswith(f"--{option}: ") and "\n" not in str(e)
        return
    stripped = text.strip()
    assert stripped.isascii() and "_" not in stripped
    assert re.fullmatch(r"[+-]?[0-9]+" if bound.whole else r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?",
                        stripped)
    assert value == (int(stripped) if bound.whole else float(stripped)) and math.isfinite(value)
    assert bound.low <= value <= bound.high and not (bound.above and value == bound.low)


@pytest.mark.parametrize("option", sorted(BOUNDS))
def test_each_bound_itself_is_taken_and_the_api_gives_numbers_too(option):
    bound = BOUNDS[option]
    assert number(str(int(bound.high)) if bound.whole else repr(bound.high), option) == bound.high
    if not bound.above:
        assert number(int(bound.low) if bound.whole else bound.low, option) == bound.low
    with pytest.raises(UsageError, match=f"--{option}: True is not"):
        number(True, option)


def test_a_constraints_ceiling_is_what_a_row_stores_and_the_docs_show_the_table():
    assert INT64_MAX == MAX_COUNT
    assert BOUNDS["max-gmacs"].high * 1e9 == pytest.approx(MAX_COUNT)
    page = (ROOT / "docs" / "hostile-inputs.md").read_text(encoding="utf-8")
    assert re.search(r"<!-- bounds-table -->\n(.*?)<!-- /bounds-table -->", page, re.S).group(1) == bounds_table(), \
        "regenerate docs/hostile-inputs.md's block: python -c 'from zoo.options.values import bounds_table; " \
        "print(bounds_table(), end=\"\")'"


def test_a_schedule_under_one_step_of_its_global_batch_is_refused(tmp_path):
    """--epochs 1e-300 of ImageNet-1k's 1,281,167 images is 1.3e-294 images: under one step of a batch of 64."""
    done = call_main("zoo.select", *TRAIN, "--batch-size", "64", "--epochs", "1e-300", "--train-images", "1281167")
    assert done.returncode == 2 and "under one step of its global batch (64)" in done.stderr, done.stderr
    done = call_main("zoo.select", *TRAIN, "--models", "deit_ti", "--batch-size", "64", "--epochs", "0.0001",
                     "--train-images", "1281167", "--format", "json")
    assert done.returncode == 0, done.stderr         # 128 images: two steps of 64


def test_a_batch_has_one_bound_in_selects_training_prediction_too():
    """zoo.select --predict --metrics train refused batches past 65,536 where every other batch option takes 2^20:
    65,537 images per GPU is now a row (excluded: it does not fit an H100's 80 GB), not a refusal."""
    done = call_main("zoo.select", *TRAIN, "--models", "deit_ti", "--batch-size", "65537", "--format", "json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["excluded"]
    assert row["model"] == "deit_ti" and row["batch_size"] == 65537 and row["excluded"].startswith("training memory")
