"""Each word the commands share is defined once (zoo/options/) and both commands use that definition."""
import ast
from pathlib import Path

import pytest
from cli import call_main

import zoo.compare
import zoo.options
import zoo.select
import zoo.select.shortlist

ROOT = Path(__file__).resolve().parents[1]
SHARED = {"FORMATS", "SELECT_FORMATS", "BACKENDS", "COMPILE_MODES"}


def assigned_names(path: Path) -> set[str]:
    """Names a module binds at its top level by assignment (an import is not a definition)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def test_the_shared_vocabularies_are_assigned_only_in_zoo_options():
    where = {str(p.relative_to(ROOT)): sorted(assigned_names(p) & SHARED) for p in (ROOT / "zoo").rglob("*.py")}
    assert {p: names for p, names in where.items() if names} == {"zoo/options/__init__.py": sorted(SHARED)}


def test_both_commands_use_the_one_definition():
    assert zoo.compare.BACKENDS is zoo.select.shortlist.BACKENDS is zoo.select.BACKENDS is zoo.options.BACKENDS
    assert zoo.compare.COMPILE_MODES is zoo.select.shortlist.COMPILE_MODES is zoo.options.COMPILE_MODES
    assert zoo.compare.FORMATS == ("table", "markdown", "csv", "json")
    assert zoo.select.FORMATS == ("table", "markdown", "json")      # select writes no CSV
    assert zoo.select.shortlist.pretraining_option is zoo.compare.pretraining_option is zoo.options.pretraining_option


def test_compare_and_select_count_the_same_adamw_training_memory(tmp_path):
    """--optimizer adamw with --detector: compare and select take the same axis and name the same fields
    (train_serve_bytes / train_mib, train_optimizer); AdamW keeps one fp32 state tensor more per trainable
    parameter than SGD with momentum: 4 bytes per trainable parameter more, each tensor an allocator block of
    512-byte units (zoo.runs.counted.serving_memory)."""
    import json

    from cli import call_main

    common = ("--models", "resnet50", "--detector", "cascade_maskrcnn", "--dtype", "bf16")
    rows = {}
    for optimizer in ("sgd", "adamw"):
        done = call_main("zoo.compare", *common, "--resolutions", "800x1344", "--metrics", "cost,memory,train",
                         "--optimizer", optimizer, "--format", "json", "--no-save")
        assert done.returncode == 0, done.stderr
        (rows[optimizer],) = json.loads(done.stdout)
    more = rows["adamw"]["train_serve_bytes"] - rows["sgd"]["train_serve_bytes"]
    assert more == rows["sgd"]["train_gpu_parts"]["grad_bytes"]        # one more fp32 tensor per parameter
    # rounded up per tensor: to 512 bytes, and a tensor over 10 MiB to its 2 MiB segment (the box head's fc6)
    assert 4 * rows["sgd"]["params"] <= more < 1.02 * 4 * rows["sgd"]["params"] and more % 512 == 0
    assert rows["adamw"]["train_optimizer"].startswith("AdamW: 2 fp32 state tensors per parameter")
    done = call_main("zoo.select", *common, "--resolution", "800x1344", "--train", "--optimizer", "adamw",
                     "--batch-size", "1", "--format", "json", "--no-save")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["shortlist"]
    assert row["train_optimizer"] == rows["adamw"]["train_optimizer"]
    assert row["train_mib"] == rows["adamw"]["train_serve_bytes"] / 2 ** 20


def test_optimizer_without_a_training_step_is_refused():
    from cli import call_main

    done = call_main("zoo.compare", "--models", "deit_ti", "--metrics", "cost", "--optimizer", "adamw")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "zoo.compare: error: --optimizer: the training step's memory; needs --metrics with train"]


def test_compare_and_select_name_the_shown_checkpoint_alike():
    """The same field in both commands' JSON has the same name and value: the accuracy a row shows and the
    checkpoint it is for (timm's results-imagenet.csv: deit_tiny_patch16_224.fb_in1k at 224, top-1 72.19)."""
    import json

    from cli import call_main

    done = call_main("zoo.compare", "--models", "deit_ti", "--metrics", "cost", "--format", "json", "--no-save")
    assert done.returncode == 0, done.stderr
    (compared,) = json.loads(done.stdout)
    done = call_main("zoo.select", "--models", "deit_ti", "--format", "json", "--no-save")
    assert done.returncode == 0, done.stderr
    (selected,) = json.loads(done.stdout)["shortlist"]
    shared = ("top1", "top1_resolution", "top1_source", "weights", "weights_label", "weights_policy", "pretraining")
    assert {k: selected[k] for k in shared} == {k: compared[k] for k in shared}
    assert (selected["top1"], selected["weights"], selected["top1_resolution"]) == \
        (72.19, "deit_tiny_patch16_224.fb_in1k", 224)


def test_both_commands_take_the_shared_options_with_one_help():
    """An option both commands take is added from zoo.options, so its help and default are the same."""
    from zoo.compare.cli import build_parser as compare_parser
    from zoo.select.cli import build_parser as select_parser

    def options(parser):
        return {a.option_strings[0]: (a.help, a.default) for a in parser._actions if a.option_strings}

    compared, selected = options(compare_parser()), options(select_parser())
    own = {"--models", "--optimizer", "--predict", "--no-save", "--backend", "--format",   # default, wording, formats
           "--metrics"}                  # compare's: what to measure; select's: train with --predict
    both = (set(compared) & set(selected)) - own - {"-h"}
    assert {"--dtype", "--device", "--detector", "--segmenter", "--weights", "--pretraining", "--compile", "--tf32",
            "--price-per-hour", "--reparam", "--epochs", "--train-images", "--gpus"} <= both
    assert {o: compared[o] for o in both} == {o: selected[o] for o in both}


def test_select_takes_frozen_stages_as_compare_does():
    """--frozen-stages is one axis of both commands: select's training memory of a Mask R-CNN with the stem and
    stages 1-2 frozen is compare's, smaller than with nothing frozen (-1); a model with blocks is excluded."""
    import json

    from cli import call_main

    common = ("--models", "swin_t", "--detector", "maskrcnn", "--pad-to", "32", "--no-save", "--format", "json")
    done = call_main("zoo.compare", *common, "--resolutions", "800x1333", "--metrics", "cost,train",
                     "--frozen-stages", "2")
    assert done.returncode == 0, done.stderr
    (compared,) = json.loads(done.stdout)
    mib = {}
    for frozen in ("2", "-1"):
        done = call_main("zoo.select", *common, "--resolution", "800x1333", "--train", "--frozen-stages", frozen)
        assert done.returncode == 0, done.stderr
        (mib[frozen],) = [r["train_mib"] for r in json.loads(done.stdout)["shortlist"]]
    assert mib["2"] == compared["train_serve_bytes"] / 2 ** 20 < mib["-1"]
    done = call_main("zoo.select", "--models", "vitdet_b16", "--detector", "maskrcnn", "--resolution", "1024",
                     "--frozen-stages", "1", "--no-save", "--format", "json")
    assert done.returncode == 0, done.stderr
    (excluded,) = json.loads(done.stdout)["excluded"]
    assert excluded["reason"].startswith("--frozen-stages: has blocks, not stages")


SHARED_RULES = [  # (options, the one line both commands refuse them with: zoo.options.check_heads / check_timing)
    (["--segmenter", "upernet", "--detector", "maskrcnn"], "--detector and --segmenter: one task head at a time"),
    (["--segmenter", "upernet", "--features"], "drop --features"),
    (["--frozen-stages", "1"], "--frozen-stages: applies to the backbone as detectors use it"),
    (["--backend", "onnxruntime", "--compile", "default"], "--backend onnxruntime: the backend "),
    (["--compile", "fastest"], "--compile: "),
]


@pytest.mark.parametrize("options,line", SHARED_RULES, ids=[" ".join(o) for o, _ in SHARED_RULES])
def test_both_commands_refuse_a_shared_rule_with_the_same_line(options, line):
    compare = call_main("zoo.compare", "--models", "resnet50", "--metrics", "cost,throughput", *options, "--no-save")
    select = call_main("zoo.select", "--models", "resnet50", *options, "--no-save")
    said = [r.stderr.strip().splitlines()[-1].partition("error: ")[2] for r in (compare, select)]
    assert (compare.returncode, select.returncode) == (2, 2) and line in said[0], said
    assert said[0] == said[1]


def test_the_commands_refuse_options_only_through_zoo_options():
    """compare's and select's usage refusals are raised in zoo/options/; left in the commands: reading a
    --from-plan file's content (zoo/select/plan.py), a file check like zoo.store.safe_io's; none in the models."""
    raising = {str(p.relative_to(ROOT)) for command in ("compare", "select") for p in (ROOT / "zoo" / command).rglob("*.py")
               if "UsageError(" in p.read_text(encoding="utf-8")}
    assert raising == {"zoo/select/plan.py"}
    assert "UsageError(" not in (ROOT / "zoo" / "runs" / "plan.py").read_text(encoding="utf-8").replace(
        'raise UsageError(f"{model} {cannot_take(', "")      # plan.py plans; a timm: model's size needs its build
    assert not [p for p in (ROOT / "zoo" / "models").rglob("*.py") if "UsageError" in p.read_text(encoding="utf-8")]
