"""zoo.compare --predict's decisions on a GPU not at hand (memory check, sweep, price) and zoo.select --predict.
Expected values are closed forms (an input's bytes, a price's arithmetic), not the code's own output."""
import json
from importlib import resources

import pytest

from cli import call_main

from analysis.predict.devices import device_sheet
from zoo.predict import inference
from zoo.runs.request import Request


def predict(request, device: str, *args, **kwargs) -> dict:
    """The predicted row's JSON, the device resolved by name as the command line resolves it."""
    return inference.predict(request, device_sheet(device), *args, **kwargs).to_json()


def test_a_batch_whose_input_alone_exceeds_the_device_is_marked():
    # 2048 fp32 images of 3 x 1024 x 1024: 2048 * 3 * 1024^2 * 4 bytes = 25.77 GB > the L4's 24 GB
    row = predict(Request("vit_ti16", 1024, 2048, "bf16"), "L4")
    assert row["serve_bytes"] >= 2048 * 3 * 1024 ** 2 * 4 and row["fits_memory"] is False
    assert predict(Request("vit_ti16", 224, 8, "bf16"), "L4")["fits_memory"] is True


def test_price_turns_the_expected_rate_into_images_per_dollar():
    row = predict(Request("vit_ti16", 224, 8, "bf16"), "A100", price_per_hour=2.0)
    assert row["imgs_per_usd"] == pytest.approx(row["imgs_per_s"] * 3600 / 2.0)


def test_compare_predict_sweep_keeps_the_latency_target_and_doubles_the_batch():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "sweep",
                       "--latency-target-ms", "20", "--predict", "A100", "--dtype", "bf16", "--format", "json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    batch = row["batch_size"]
    assert row["latency_ms"] <= 20 and batch & (batch - 1) == 0          # a power of two under the target
    assert predict(Request("vit_ti16", 224, batch * 2, "bf16"), "A100")["latency_ms"] > 20


def test_price_needs_predict():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--price-per-hour", "2")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and not result.stdout


def test_select_predict_answers_marked_predicted():
    result = call_main("zoo.select", "--predict", "A100", "--dtype", "bf16", "--max-latency-ms", "10",
                       "--batch-size", "32", "--models", "vit_ti16,vit_b16,vit_l16")
    assert result.returncode == 0, result.stderr
    assert "PREDICTED, not measured" in result.stdout and "vit_ti16" in result.stdout
    bad = call_main("zoo.select", "--predict", "V100", "--dtype", "bf16", "--models", "vit_ti16")
    assert bad.returncode == 2 and "bf16" in bad.stderr


def test_a_gpu_whose_architecture_no_source_ran_gets_the_unfitted_band_and_says_so():
    data = json.loads(resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text())
    fitted, unfitted = data["bands"]["fitted"], data["bands"]["unfitted"]
    request = Request("vit_ti16", 224, 8, "bf16")
    a100, h100 = predict(request, "A100"), predict(request, "H100")       # Ampere GA100 fitted, Hopper not
    assert a100["architecture"] == "Ampere GA100" and h100["architecture"] == "Hopper"
    assert a100["imgs_per_s_p10"] / a100["imgs_per_s"] == pytest.approx(fitted[0])
    assert h100["imgs_per_s_p90"] / h100["imgs_per_s"] == pytest.approx(unfitted[1])
    assert "no fitted source ran a Hopper GPU" in h100["band_from"] and "Hopper" not in data["arch"]
    assert "leave-one-source-out" in a100["band_from"]


def test_the_torch_release_and_attention_path_are_inputs_and_rows_name_them():
    request = Request("vit_ti16", 224, 64, "fp16")
    new, old = predict(request, "RTX 4090", torch=(2, 4)), predict(request, "RTX 4090", torch=(1, 10))
    assert (new["torch"], new["attention"]) == ("2.4", "fused")
    assert (old["torch"], old["attention"]) == ("1.10", "unfused")         # no SDPA before torch 2.0
    assert old["imgs_per_s"] != new["imgs_per_s"]
    own = predict(request, "RTX 4090", torch=(2, 4), attention="unfused")  # code that writes its own attention
    assert own["attention"] == "unfused" and own["imgs_per_s"] != new["imgs_per_s"]
    later = predict(request, "RTX 4090", torch=(2, 7))
    assert later["torch"] == "2.7 (the factors of 2.4)" and later["imgs_per_s"] == pytest.approx(new["imgs_per_s"])
    # fp32 on an A100: cuBLAS took TF32 by default before torch 1.12, cuDNN always does
    fp32 = Request("vit_ti16", 224, 8, "fp32")
    assert predict(fp32, "A100", torch=(1, 10))["matmul_precision"] == "tf32"
    assert predict(fp32, "A100", torch=(2, 4))["matmul_precision"] == "fp32"


def test_compare_takes_torch_and_attention_and_refuses_them_without_predict():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "8",
                       "--predict", "A100", "--torch", "1.13", "--attention", "fused", "--format", "json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["torch"] == "1.13" and row["attention"] == "fused"
    for bad in (["--predict", "A100", "--torch", "two"], ["--predict", "A100", "--attention", "flash"],
                ["--torch", "2.4"]):
        refused = call_main("zoo.compare", "--models", "vit_ti16", "--metrics", "cost", *bad)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1 and not refused.stdout


def test_two_devices_give_the_break_even_price_ratio_of_their_expected_rates():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "8",
                       "--predict", "A100,L4", "--dtype", "bf16", "--format", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    a100, l4 = (r for r in out["rows"])
    (even,) = out["break_even"]
    # same images per dollar when price_A / price_L4 = rate_A / rate_L4
    assert even["break_even_price_ratio"] == pytest.approx(a100["imgs_per_s"] / l4["imgs_per_s"])
    assert even["break_even_low"] == pytest.approx(a100["imgs_per_s_p10"] / l4["imgs_per_s_p90"])
    swept = call_main("zoo.compare", "--models", "vit_ti16", "--batch-sizes", "sweep", "--latency-target-ms", "9",
                      "--predict", "A100,L4", "--format", "json", "--no-save")
    assert swept.returncode == 0, swept.stderr       # each device at its own best batch: no break-even at one batch
    assert "break_even" not in json.loads(swept.stdout) and len(json.loads(swept.stdout)["decisions"]) == 1


def test_select_predict_through_the_api_is_the_command_lines_answer():
    """One --predict path: select(..., predict=) and `zoo.select --predict` give the same answer, refuse what a
    prediction cannot take, and rank on the prediction (ViT-B/16 does 14x DeiT-Ti's MACs: 17.6 vs 1.25 GMACs)."""
    from zoo.errors import UsageError
    from zoo.select import render, select

    api = select(["vit_b16", "deit_ti"], 224, predict="A100", dtype="bf16", batch_size=32, max_latency_ms=1e4,
                 rank="imgs_per_s")
    cli = call_main("zoo.select", "--predict", "A100", "--dtype", "bf16", "--batch-size", "32", "--max-latency-ms",
                    "1e4", "--models", "vit_b16,deit_ti", "--format", "json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == json.loads(json.dumps(api))
    assert api["predicted"] is True and [r["model"] for r in api["shortlist"]] == ["deit_ti", "vit_b16"]
    assert render(api, "table").startswith("ranked by predicted imgs_per_s")
    with pytest.raises(UsageError, match="--predict: .* drop --max-gmacs"):
        select(["deit_ti"], 224, predict="A100", max_gmacs=5)
    with pytest.raises(UsageError, match="--predict"):
        select(["deit_ti"], 224, predict="abacus")


def test_a_predicted_row_is_its_dataclass_and_refuses_a_misspelt_field():
    from zoo.predict.rows import PredictedRow

    row = inference.predict(Request("vit_ti16", 224, 8, "bf16"), device_sheet("A100"), price_per_hour=2.0)
    fields = row.to_json()
    assert PredictedRow.of(fields) == row                          # the JSON holds the whole row
    assert "sweep_note" not in fields and row.imgs_per_usd == fields["imgs_per_usd"]
    with pytest.raises(ValueError, match="not a predicted row: .*'imgs_per_sec'"):
        PredictedRow.of({**fields, "imgs_per_sec": 1.0})
    with pytest.raises(ValueError, match="not a predicted row: .*'latency_ms'"):
        PredictedRow.of({k: v for k, v in fields.items() if k != "latency_ms"})


def test_select_predict_gives_published_top1_only_at_the_square_size_it_was_published_at():
    """vit_ti16 at 224: timm's results-imagenet.csv row vit_tiny_patch16_224.augreg_in21k_ft_in1k, top-1 75.452
    (zoo/models/data/timm_results.csv); at 224x320 no checkpoint was evaluated, so no top-1."""
    top1 = {}
    for size in ("224", "224x320"):
        result = call_main("zoo.select", "--predict", "A100", "--dtype", "bf16", "--models", "vit_ti16",
                           "--resolution", size, "--format", "json")
        assert result.returncode == 0, result.stderr
        top1[size] = [r["top1"] for r in json.loads(result.stdout)["shortlist"]]
    assert top1 == {"224": [pytest.approx(75.452)], "224x320": [None]}


def test_fp32_on_an_a100_runs_convolutions_tf32_and_matmuls_fp32_unless_told():
    # PyTorch's defaults: torch.backends.cudnn.allow_tf32 True, torch.backends.cuda.matmul.allow_tf32 False; the
    # A100 datasheet's dense peaks: TF32 156, FP32 19.5 TFLOP/s; the V100 has no TF32 tensor cores
    request = Request("timm:resnet18", 224, 64, "fp32")
    default, off, on = (predict(request, "A100", tf32) for tf32 in (None, "off", "on"))
    assert (default["conv_precision"], default["matmul_precision"]) == ("tf32", "fp32")
    assert (default["conv_peak_flops"], default["peak_flops"]) == (156e12, 19.5e12)
    assert (off["conv_precision"], on["matmul_precision"]) == ("fp32", "tf32")
    assert off["latency_ms"] > default["latency_ms"] and off["roofline_ms"] > default["roofline_ms"]
    v100 = predict(request, "V100", "on")
    assert (v100["conv_precision"], v100["matmul_precision"]) == ("fp32", "fp32")


@pytest.mark.parametrize("args", [("--tf32", "on", "--predict", "A100", "--dtype", "bf16"),
                                  ("--tf32", "maybe", "--predict", "A100"),
                                  ("--tf32", "on")])
def test_tf32_refusals_are_one_line(args):
    result = call_main("zoo.compare", "--models", "vit_ti16", *args)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and not result.stdout


def test_channels_last_takes_the_nhwc_factors():
    request = Request("timm:resnet18", 224, 64, "fp16")
    nchw, nhwc = (predict(request, "RTX 3090", channels_last=cl) for cl in (False, True))
    assert (nchw["memory_format"], nhwc["memory_format"]) == ("contiguous", "channels_last")
    assert nhwc["imgs_per_s"] != nchw["imgs_per_s"]          # the convolutions take their own factors


def test_compare_predict_channels_last_reaches_the_rows():
    result = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "224", "--batch-sizes", "8",
                       "--predict", "A100", "--dtype", "bf16", "--channels-last", "--format", "json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["memory_format"] == "channels_last"
