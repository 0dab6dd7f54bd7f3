"""Each word the commands share is defined once (zoo/options.py) and both commands use that definition."""
import ast
from pathlib import Path

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
    assert {p: names for p, names in where.items() if names} == {"zoo/options.py": sorted(SHARED)}


def test_both_commands_use_the_one_definition():
    assert zoo.compare.BACKENDS is zoo.select.shortlist.BACKENDS is zoo.select.BACKENDS is zoo.options.BACKENDS
    assert zoo.compare.COMPILE_MODES is zoo.select.shortlist.COMPILE_MODES is zoo.options.COMPILE_MODES
    assert zoo.compare.FORMATS == ("table", "markdown", "csv", "json")
    assert zoo.select.FORMATS == ("table", "markdown", "json")      # select writes no CSV
    assert zoo.select.shortlist.pretraining_option is zoo.compare.pretraining_option is zoo.options.pretraining_option


def test_compare_and_select_count_the_same_adamw_training_memory(tmp_path):
    """--optimizer adamw with --detector: compare and select take the same axis and name the same fields
    (train_serve_bytes / train_mib, train_optimizer); AdamW keeps one fp32 state tensor more per trainable
    parameter than SGD with momentum: 4 bytes per trainable parameter more (zoo.runs.counted.serving_memory)."""
    import json

    from cli import call_main

    common = ("--models", "resnet50", "--detector", "cascade_maskrcnn", "--dtype", "bf16")
    rows = {}
    for optimizer in ("sgd", "adamw"):
        done = call_main("zoo.compare", *common, "--resolutions", "800x1344", "--metrics", "cost,memory,train",
                         "--optimizer", optimizer, "--format", "json", "--no-save")
        assert done.returncode == 0, done.stderr
        (rows[optimizer],) = json.loads(done.stdout)
    assert rows["adamw"]["train_serve_bytes"] - rows["sgd"]["train_serve_bytes"] == 4 * rows["sgd"]["params"]
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
