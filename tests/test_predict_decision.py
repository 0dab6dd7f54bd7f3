"""--predict across devices (issue 39, item 6): the device-list and price parsers, the best batch under a latency
target against a closed-form stand-in prediction, the winner and whether the bands separate it (hand-made rows),
and predicted rows appended to the user's folder and read back by zoo.report."""
import dataclasses
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli import call_main

from analysis.predict.devices import DEVICE_SHEETS, device_sheet
from zoo.errors import UsageError
from zoo.options import MAX_PRICE_PER_HOUR, MIN_PRICE_PER_HOUR, predict_devices, prices_per_hour
from zoo.predict import decision, rows as predicted

NAMES = sorted(DEVICE_SHEETS)


def _spelt(name: str, upper: bool, spaces: bool) -> str:
    """A way a user may type a datasheet name: any case, spaces dropped (device_sheet ignores both)."""
    text = name.upper() if upper else name.lower()
    return text.replace(" ", "") if spaces else text


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True), st.booleans(), st.booleans())
def test_a_device_list_gives_the_datasheet_names_in_order(names, upper, spaces):
    assert [s.name for s in predict_devices(",".join(_spelt(n, upper, spaces) for n in names))] == names


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True), st.data())
def test_a_device_named_twice_or_an_empty_item_is_refused(names, data):
    doubled = data.draw(st.sampled_from(names))
    for text in (",".join([*names, doubled.lower()]), ",".join(names) + ",", ",," + names[0]):
        with pytest.raises(UsageError, match="--predict"):
            predict_devices(text)


prices = st.floats(MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR, allow_nan=False)


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True), st.data())
def test_a_price_map_gives_each_device_its_price(names, data):
    given_prices = {n: data.draw(prices) for n in names}
    order = data.draw(st.permutations(names))
    text = ",".join(f"{_spelt(n, data.draw(st.booleans()), False)}={given_prices[n]!r}" for n in order)
    assert prices_per_hour(text, [DEVICE_SHEETS[n] for n in names]) == given_prices


bad_prices = st.one_of(st.floats(max_value=MIN_PRICE_PER_HOUR, exclude_max=True),
                       st.floats(min_value=MAX_PRICE_PER_HOUR, exclude_min=True),
                       st.sampled_from(["5e-324", "0", "-1", "inf", "nan", "1e400", "cheap", ""]))


@given(bad_prices)
def test_a_price_that_is_not_a_sane_positive_number_is_refused_in_one_line(bad):
    for text in (str(bad), f"A100={bad}"):
        with pytest.raises(UsageError) as refused:
            prices_per_hour(text, [DEVICE_SHEETS["A100"]])
        assert "--price-per-hour" in str(refused.value) and "\n" not in str(refused.value)


def test_one_number_prices_one_device_and_every_device_needs_a_price():
    def sheets(names: list[str]) -> list:
        return [DEVICE_SHEETS[n] for n in names]

    assert prices_per_hour("0.8", sheets(["L4"])) == {"L4": 0.8}
    for text, devices, named in (("0.8", ["L4", "A100"], "DEVICE=USD"), ("L4=0.8", ["L4", "A100"], "no price for A100"),
                                 ("L4=0.8,H100=4", ["L4"], "not among"), ("L4=0.8,l4=1", ["L4"], "twice"),
                                 ("P100=1", ["L4"], "unknown device")):
        with pytest.raises(UsageError, match=named):
            prices_per_hour(text, sheets(devices))


FILLER = {f.name: 0 for f in dataclasses.fields(predicted.PredictedRow) if f.default is dataclasses.MISSING}


def stand_in(fixed_ms: float, ms_per_image: float, memory_batches: int):
    """A closed-form prediction: latency = fixed_ms + ms_per_image x batch; memory fits up to memory_batches."""
    return lambda batch: predicted.PredictedRow(**{**FILLER, "batch_size": batch, "fits_memory": batch <= memory_batches,
                                                   "latency_ms": fixed_ms + ms_per_image * batch})


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 50), st.floats(0.001, 20), st.floats(0.5, 500), st.integers(1, 1 << 13))
def test_the_best_batch_is_the_largest_power_of_two_within_the_target(fixed_ms, ms_per_image, target_ms, memory):
    row = predicted.best_batch(stand_in(fixed_ms, ms_per_image, memory), target_ms)
    within = (target_ms - fixed_ms) / ms_per_image             # the largest real batch within the target
    exponent = math.floor(math.log2(min(within, memory, predicted.MAX_SWEEP_BATCH))) if within >= 1 else None
    expected = 2 ** exponent if exponent is not None else None
    if expected is None or fixed_ms + ms_per_image * expected > target_ms:     # log2 rounding at the edge
        expected = next((2 ** k for k in range(13, -1, -1) if 2 ** k <= memory
                         and fixed_ms + ms_per_image * 2 ** k <= target_ms), None)
    assert row.batch_size == (expected or 1) and row.sweep_latency_target_ms == target_ms
    assert (row.sweep_note is None) == (expected is not None)


def _row(device, rate, p10=0.8, p90=1.25, batch=64, fits=True, note=None):
    return {"predicted": True, "device": device, "model": "m", "img_h": 224, "img_w": 224, "img_size": 224,
            "dtype": "bf16", "batch_size": batch, "imgs_per_s": rate, "imgs_per_s_p10": rate * p10,
            "imgs_per_s_p90": rate * p90, "fits_memory": fits, "sweep_note": note}


def test_the_winner_is_the_most_images_per_dollar_and_the_band_decides_if_it_separates():
    rows = [_row("L4", 1000), _row("A100", 5000), _row("H100", 9000)]
    prices = {"L4": 0.8, "A100": 2.5, "H100": 4.5}
    # per dollar: L4 1000 x 3600 / 0.8 = 4.5e6, A100 5000 x 3600 / 2.5 = 7.2e6, H100 9000 x 3600 / 4.5 = 7.2e6
    found = decision.decide(rows, prices)
    assert {found["winner"], found["runner_up"]} == {"A100", "H100"} and found["winner_value"] == pytest.approx(7.2e6)
    assert found["band_separates"] is False        # 7.2e6 x 0.8 < 7.2e6 x 1.25
    by_rate = decision.decide(rows)                # no prices: images per second; 9000 x 0.8 = 7200 > 5000 x 1.25
    assert (by_rate["winner"], by_rate["runner_up"], by_rate["band_separates"]) == ("H100", "A100", True)
    assert by_rate["winner_over_runner_up"] == pytest.approx(9000 / 5000)
    left = decision.decide([_row("L4", 1000), _row("H100", 9000, fits=False), _row("A100", 5000, note="misses")])
    assert left["winner"] == "L4" and left["runner_up"] is None and set(left["not_eligible"]) == {"H100", "A100"}


def test_predict_on_three_devices_saves_its_rows_and_the_report_reads_them_back(tmp_path):
    from zoo.report.gpu_predictions import read_predictions, write_predictions
    from zoo.report.predicted_gpu import predicted_table
    from zoo.report.rows import load

    done = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "sweep",
                     "--latency-target-ms", "20", "--predict", "L4,A100,H100", "--dtype", "bf16", "--price-per-hour",
                     "L4=0.8,A100=2.5,H100=4.5", "--format", "json", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    (decided,) = out["decisions"]
    rates = {r["device"]: r["imgs_per_s"] * 3600 / r["price_per_hour_usd"] for r in out["rows"]}
    assert decided["winner"] == max(rates, key=rates.get) and decided["ranked_by"] == "imgs_per_usd"
    saved = load(tmp_path).predicted
    assert [(r["device"], r["batch_size"], r["saved_by"]) for r in saved] == \
        [(r["device"], r["batch_size"], "zoo.compare --predict") for r in out["rows"]]
    assert all(r["predicted"] is True and r["latency_ms"] <= 20 and r["calibration_source"] for r in saved)
    assert "zoo.compare --predict" in predicted_table(saved)
    write_predictions(tmp_path, ["deit_ti"])                 # --refresh rewrites the fixed set, keeps the user's
    rows, problem = read_predictions(tmp_path)
    assert problem is None and [r for r in rows if r.get("saved_by")] == saved and len(rows) > len(saved)
    again = call_main("zoo.compare", "--models", "vit_ti16", "--predict", "L4", "--out", str(tmp_path), "--no-save")
    assert again.returncode == 0 and len(load(tmp_path).predicted) == len(rows)       # --no-save writes nothing


@pytest.mark.parametrize("extra, named", [(["--compile"], "--compile"), (["--iters", "5"], "--iters"),
                                          (["--device", "cpu"], "--device"), (["--price-per-hour", "0"], "price"),
                                          (["--price-per-hour", "5e-324"], "price"), (["--reparam", "x"], "reparam")])
def test_predict_refuses_what_it_ignores_or_cannot_price_writing_nothing(tmp_path, extra, named):
    done = call_main("zoo.compare", "--models", "vit_ti16", "--predict", "A100", "--out", str(tmp_path / "o"), *extra)
    assert done.returncode == 2 and done.stdout == "" and not (tmp_path / "o").exists()
    assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr


def test_the_form_counted_is_named_and_trained_is_what_benchmark_py_runs_without_reparam():
    """RepVGG-A0: timm's published GMACs are 1.52 trained (RTX 3090 table, pt240) and 1.36 fused (RTX 4090
    table, pt291, run with --reparam); the fused form runs fewer FLOPs, so it is predicted faster."""
    from zoo.predict.inference import gpu_forward, predict
    from zoo.runs.request import Request

    request, a100 = Request("timm:repvgg_a0", 224, 8, "bf16"), device_sheet("A100")
    trained = predict(request, a100, counted=gpu_forward(request, reparam="trained"))
    fused = predict(request, a100)                                      # counted here: the inference form
    assert (trained.reparam, fused.reparam) == ("trained", "fused")
    assert fused.imgs_per_s > trained.imgs_per_s
    assert "reparam" not in predict(Request("vit_ti16", 224, 8, "bf16"), a100).to_json()     # one form only
    done = call_main("zoo.compare", "--models", "timm:repvgg_a0", "--predict", "A100", "--dtype", "bf16", "--format", "json",
                     "--no-save")
    assert done.returncode == 0 and json.loads(done.stdout)[0]["reparam"] == "trained"


def test_select_on_three_devices_shortlists_on_each_and_names_the_winner_per_model():
    from zoo.select import select

    cli = call_main("zoo.select", "--predict", "L4,A100,H100", "--dtype", "bf16", "--batch-size", "16", "--models",
                    "vit_ti16,deit_s", "--price-per-hour", "L4=0.8,A100=2.5,H100=4.5", "--format", "json")
    assert cli.returncode == 0, cli.stderr
    out = json.loads(cli.stdout)
    assert list(out["per_device"]) == ["L4", "A100", "H100"] and len(out["decisions"]) == 2
    for decided in out["decisions"]:
        usd = {d: next(r["imgs_per_usd"] for r in a["shortlist"] if r["model"] == decided["model"])
               for d, a in out["per_device"].items()}
        assert decided["winner"] == max(usd, key=usd.get)
    api = select(["vit_ti16", "deit_s"], 224, predict="L4,A100,H100", dtype="bf16", batch_size=16)
    assert [d["ranked_by"] for d in api["decisions"]] == ["imgs_per_s", "imgs_per_s"]


@given(st.floats(1e-3, 1e12))
def test_plain_figures_keep_four_significant_digits_and_never_an_exponent(value):
    from zoo.console.markdown import plain

    text = plain(value)
    assert "e" not in text and float(text.replace(",", "")) == pytest.approx(value, rel=5e-4)
    assert (plain(1.0959e4), plain(0.012345), plain(800.0), plain(30104036.2)) == ("10,960", "0.01235", "800",
                                                                                  "30,100,000")


def test_select_predict_appends_its_rows_and_bad_input_writes_nothing(tmp_path):
    from zoo.report.rows import load

    done = call_main("zoo.select", "--predict", "A100", "--dtype", "bf16", "--models", "vit_ti16,deit_s",
                     "--max-latency-ms", "1", "--batch-size", "64", "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    rows = load(tmp_path / "o").predicted
    assert sorted(r["model"] for r in rows) == ["deit_s", "vit_ti16"] and {r["saved_by"] for r in rows} == \
        {"zoo.select --predict"} and all(r["excluded"] for r in rows)      # excluded rows are kept too, marked
    bad = call_main("zoo.select", "--predict", "A100", "--models", "vit_ti16", "--rank", "speed",
                    "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and not (tmp_path / "bad").exists()
    (tmp_path / "f" / "results" / "predicted.jsonl").mkdir(parents=True)
    blocked = call_main("zoo.compare", "--models", "vit_ti16", "--predict", "A100", "--out", str(tmp_path / "f"))
    assert blocked.returncode == 2 and "predicted.jsonl" in blocked.stderr and not blocked.stdout


def test_a_report_of_saved_rows_only_does_not_describe_them_as_the_fixed_set():
    from zoo.report.predicted_gpu import intro

    row = {**_row("L4", 1000), "calibration_source": "timm", "band_from": "held out"}
    fixed_only, saved_only = intro([row]), intro([{**row, "saved_by": "zoo.compare --predict"}])
    assert "batch 1 and 64" in fixed_only and "saved by" not in fixed_only
    assert "batch 1 and 64" not in saved_only and "saved by `--predict`" in saved_only


def test_select_best_batch_is_compares_sweep_batch_and_needs_a_latency_target():
    """One best-batch search (zoo.predict.rows.best_batch) behind both commands: the same batch, which doubled
    would pass the target (its own correctness: the closed-form test above)."""
    from zoo.predict.inference import predict
    from zoo.runs.request import Request

    sel = call_main("zoo.select", "--predict", "A100", "--dtype", "bf16", "--batch-size", "best", "--max-latency-ms",
                    "20", "--models", "vit_ti16", "--format", "json", "--no-save")
    cmp = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "sweep",
                    "--latency-target-ms", "20", "--predict", "A100", "--dtype", "bf16", "--format", "json", "--no-save")
    assert sel.returncode == 0 and cmp.returncode == 0, sel.stderr + cmp.stderr
    (row,) = json.loads(sel.stdout)["shortlist"]
    assert row["batch_size"] == json.loads(cmp.stdout)[0]["batch_size"] and row["latency_ms"] <= 20
    assert predict(Request("vit_ti16", 224, row["batch_size"] * 2, "bf16"), device_sheet("A100")).latency_ms > 20
    bad = call_main("zoo.select", "--predict", "A100", "--batch-size", "best", "--models", "vit_ti16", "--no-save")
    assert bad.returncode == 2 and "--max-latency-ms" in bad.stderr
