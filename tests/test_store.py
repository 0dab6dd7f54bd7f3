"""The append-only results store: whole lines, torn lines skipped, resume keys, pandas loader."""
import json

import pytest

from zoo.store import ResultStore, load_frame
from zoo.tasks import Task, row_key, task_key


def row(model, img_size=224, **extra):
    task = Task("cost", model, img_size)
    return {"schema": 1, "kind": "cost", "model": model, "img_size": img_size, "batch_size": 1,
            "settings": task.settings, "software": {"torch": "x"}, "env": {}, "macs": 1, **extra}


def test_append_and_read_back(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    store.append(row("b"))
    lines = (tmp_path / "results" / "cost.jsonl").read_text().splitlines()
    assert [json.loads(line)["model"] for line in lines] == ["a", "b"]
    assert [r["model"] for r in store.rows()] == ["a", "b"]


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    with open(store.path("cost"), "a") as f:
        f.write('{"kind": "cost", "model": "b", "img_')   # a crash mid-write
    with pytest.warns(UserWarning, match="torn"):
        assert [r["model"] for r in store.rows()] == ["a"]


def test_failed_rows_are_not_resume_keys(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    store.append(row("b", failed="RuntimeError: boom"))
    assert store.keys() == {row_key(row("a"))}


def test_task_key_matches_the_key_of_the_row_it_produces():
    from zoo.tasks import run_task

    task = Task("cost", "vit_ti16", 224)
    assert task_key(task) == row_key(run_task(task))


def test_unknown_kind_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        ResultStore(tmp_path).path("speed")


def test_pandas_loader(tmp_path):
    ResultStore(tmp_path).append(row("a", img_size=384))
    frame = load_frame(tmp_path, "cost")
    assert list(frame["model"]) == ["a"] and list(frame["settings.dtype"]) == ["fp32"]
