"""Options' bounds and their messages (issue 42, defects 7 and 10): every refusal is exit 2 and one line that names
what is accepted; nothing is counted or written."""
import pytest

from zoo.select.cli import main


@pytest.mark.parametrize("argv, said", [
    # 5e-324 USD/hour made images per dollar Infinity in the JSON and tied every model
    (["--predict", "h100", "--models", "deit_ti", "--rank", "imgs_per_usd", "--price-per-hour", "5e-324"],
     "--price-per-hour: H100's 5e-324 USD is outside 0.001 to 1,000,000 USD per hour"),
    (["--models", "convnext_t", "--features", "--frozen-stages", "-2"],
     "--frozen-stages: -2 is below -1; -1 freezes nothing, 0 the stem, K the stem and stages 1..K"),
])
def test_a_refusal_says_what_is_accepted(argv, said, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path)] if "--predict" not in argv else argv) == 2
    err = capsys.readouterr().err
    assert err == f"zoo.select: error: {said}\n"
    assert list(tmp_path.iterdir()) == []


def test_select_predict_takes_the_batches_compare_predict_takes(capsys):
    # docs/prediction.md and zoo.compare --predict: batches up to 2^20; select --predict refused above 65,536
    from zoo.options.values import MAX_BATCH
    from zoo.store.schema import BOUNDS

    assert MAX_BATCH == BOUNDS["batch_size"][1] == 2 ** 20
    code = main(["--predict", "h100", "--models", "deit_ti", "--batch-size", str(2 ** 17), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0 and "larger than archzoo's bound" not in out.err
    assert main(["--predict", "h100", "--models", "deit_ti", "--batch-size", str(2 ** 20 + 1)]) == 2
    assert "larger than archzoo's bound of 1,048,576" in capsys.readouterr().err
