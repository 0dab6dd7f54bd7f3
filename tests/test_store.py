"""The append-only results store: validated rows, whole lines, bad lines named and never measured, the
run lock, a torn last line never glued to the next row, no partial row on a full disk, the pandas loader."""
import errno
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.errors import UsageError
from zoo.store.schema import SCHEMA_VERSION, SchemaError, row_key, validate
from zoo.store.store import ResultStore, StoreWriteError, latest, load_frame
from zoo.runs.tasks import Task, base_row, task_key
from analysis.size import Size


def row(model, img_size=224, **extra):
    return {**base_row(Task.named("cost", model, Size.of(img_size))), "env": {}, "params": 10, "macs": 1, "act_peak_bytes": 4,
            **extra}


def lines(store, kind="cost"):
    return store.path(kind).read_bytes().split(b"\n")


def test_append_and_read_back(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    ResultStore(tmp_path).append(row("b"))                         # a later run appends to a whole file
    raw = (tmp_path / "results" / "cost.jsonl").read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2          # one line per row: no blank line between
    assert [json.loads(line)["model"] for line in raw.decode().splitlines()] == ["a", "b"]
    assert [r["model"] for r in store.rows()] == ["a", "b"] and store.bad_lines == []


def test_a_torn_last_line_is_skipped_named_and_never_glued_to_the_next_row(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    with open(store.path("cost"), "a") as f:
        f.write('{"kind": "cost", "model": "b", "img_')   # a crash mid-write
    with pytest.warns(UserWarning, match="torn last line"):
        assert [r["model"] for r in store.rows()] == ["a"]
    ResultStore(tmp_path).append(row("c"))                # a later run appends
    reread = ResultStore(tmp_path)
    with pytest.warns(UserWarning, match="line 2: not JSON"):   # now a middle line: not called torn
        assert [r["model"] for r in reread.rows()] == ["a", "c"]


def test_a_row_whose_size_label_contradicts_its_height_and_width_is_refused_in_one_line():
    with pytest.raises(SchemaError) as refused:
        validate({**row("a", (800, 1344)), "img_size": 800})
    assert str(refused.value) == "img_size 800 does not match img_h x img_w 800x1344"


def test_a_complete_last_row_without_its_newline_is_kept(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    store.path("cost").write_bytes(store.path("cost").read_bytes().rstrip(b"\n"))   # a hand edit
    ResultStore(tmp_path).append(row("b"))
    assert [r["model"] for r in ResultStore(tmp_path).rows()] == ["a", "b"]


@pytest.mark.parametrize("bad, reason", [
    (b"\xff\xfe not text", "not UTF-8"),
    (b"null", "JSON object"),
    (b"[1, 2]", "JSON object"),
    (json.dumps({**row("x"), "schema": 99}).encode(), "schema 99"),
    (json.dumps({k: v for k, v in row("x").items() if k != "batch_size"}).encode(), "lacks batch_size"),
    (json.dumps({**row("x"), "macs": "many"}).encode(), "macs is str"),
    (json.dumps({**row("x"), "surprise": 1}).encode(), "unknown field"),
    (json.dumps({**base_row(Task.named("throughput", "x", Size.of(224))), "imgs_per_s": 1.0, "latency_ms_p50": 1.0}).encode(),
     "in the cost file"),
])
def test_bad_lines_are_skipped_counted_and_named(tmp_path, bad, reason):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    with open(store.path("cost"), "ab") as f:
        f.write(bad + b"\n")
    store.append(row("b"))
    with pytest.warns(UserWarning, match="skipped 1 line"):
        assert [r["model"] for r in store.rows()] == ["a", "b"]
    (bad_line,) = store.bad_lines
    assert bad_line.number == 2 and reason in bad_line.reason
    if bad.startswith(b"\xff"):
        assert bad_line.reason == "not UTF-8 text"              # shown to the user as is


def test_a_row_of_another_schema_is_never_measured(tmp_path):
    store = ResultStore(tmp_path)
    store.dir.mkdir(parents=True)
    store.path("cost").write_text(json.dumps({**row("vit_h14"), "schema": 99}) + "\n")
    with pytest.warns(UserWarning, match="schema 99"):
        assert store.rows() == []


def test_invalid_rows_are_refused_on_write(tmp_path):
    with pytest.raises(SchemaError, match="lacks macs"):
        ResultStore(tmp_path).append({k: v for k, v in row("a").items() if k != "macs"})
    assert not (tmp_path / "results" / "cost.jsonl").exists()


def test_resume_skips_measured_rows_and_retries_failed_and_skipped_ones(tmp_path):
    from zoo.runs.scheduler import schedule

    store = ResultStore(tmp_path)
    store.append(row("a"))
    store.append({**base_row(Task.named("cost", "b", Size.of(224))), "failed": "RuntimeError: boom"})
    store.append({**base_row(Task.named("cost", "c", Size.of(224))), "skipped": "rule"})
    tasks = [Task.named("cost", m, Size.of(224)) for m in "abc"] + [Task.named("throughput", "a", Size.of(224))]
    plan = schedule(tasks, store.rows())
    assert plan.reused == [row("a")] and plan.cost == tasks[1:3] and plan.timed == tasks[3:]
    assert plan.macs_for(tasks[3]) == row("a")["macs"]          # the stored count is handed to the timing


def test_a_schedule_reuses_only_what_reuse_allows_and_takes_an_earlier_schedules_counts():
    from zoo.runs.scheduler import schedule
    from zoo.runs.tasks import machine

    timed = [Task.named("throughput", m, Size.of(224)) for m in "ab"]
    stored = [{**base_row(t), "env": machine("cpu"), "noisy": m == "a", "imgs_per_s": 1.0, "latency_ms_p50": 1.0}
              for t, m in zip(timed, "ab")]
    plan = schedule(timed, stored, reuse=lambda r: not r["noisy"])         # zoo.select: a noisy row is timed again
    assert plan.timed == timed[:1] and plan.answered == {timed[1]: stored[1]}
    assert schedule(timed, stored).timed == []
    counts = schedule([Task.named("cost", "a", Size.of(224))], [row("a", macs=7)])
    assert schedule(timed, counted=counts).macs_for(timed[0]) == 7           # counted first, then planned the timing


def test_task_key_matches_the_key_of_the_row_it_produces():
    from zoo.runs.tasks import run_task

    task = Task.named("cost", "vit_ti16", Size.of(224))
    assert task_key(task) == row_key(run_task(task))


def test_one_run_at_a_time_holds_the_folder(tmp_path):
    first = ResultStore(tmp_path)
    with first.locked():
        with pytest.raises(UsageError, match="in use by another archzoo run"):
            with ResultStore(tmp_path).locked():
                pass
    with ResultStore(tmp_path).locked():      # released after the first run
        pass


def test_a_full_disk_leaves_no_partial_row(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    store.append(row("a"))
    store.path("cost").write_bytes(store.path("cost").read_bytes().rstrip(b"\n"))   # and no newline at the end
    store = ResultStore(tmp_path)
    before = store.path("cost").read_bytes()
    real_fsync = __import__("os").fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("zoo.store.store.os.fsync", full)
    with pytest.raises(StoreWriteError, match="disk is full"):
        store.append(row("b"))
    monkeypatch.setattr("zoo.store.store.os.fsync", real_fsync)
    assert store.path("cost").read_bytes() == before      # the partial row was cut back off
    store.append(row("c"))
    assert [r["model"] for r in ResultStore(tmp_path).rows()] == ["a", "c"]


def test_latest_replaces_the_same_measurement_on_the_same_machine():
    timed = lambda cpu, imgs: {**base_row(Task.named("throughput", "m", Size.of(224))), "env": {"cpu_model": cpu, "gpu_name": None},
                               "imgs_per_s": imgs, "latency_ms_p50": 1.0}
    kept = latest([timed("A", 1.0), timed("B", 2.0), timed("A", 3.0)])
    assert sorted((r["env"]["cpu_model"], r["imgs_per_s"]) for r in kept) == [("A", 3.0), ("B", 2.0)]


def test_unknown_kind_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        ResultStore(tmp_path).path("speed")


def test_pandas_loader(tmp_path):
    ResultStore(tmp_path).append(row("a", img_size=384))
    ResultStore(tmp_path).append(row("a", img_size=384, macs=2))       # the same measurement again
    frame = load_frame(tmp_path, "cost")
    assert list(frame["model"]) == ["a"] and list(frame["macs"]) == [2] and list(frame["settings.dtype"]) == ["fp32"]
    assert len(load_frame(tmp_path, "cost", all_rows=True)) == 2
    assert load_frame(tmp_path / "nothing", "cost").empty


def test_pandas_loader_flattens_one_level_only(tmp_path):
    """A row may hold a dict inside a dict field (the schema bounds only its numbers): it stays one cell."""
    ResultStore(tmp_path).append(row("a", env={"ray": {"node": "n1"}}))
    frame = load_frame(tmp_path, "cost")
    assert frame["env.ray"].tolist() == [{"node": "n1"}] and "env.ray.node" not in frame


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 400), junk=st.binary(max_size=40))
def test_random_damage_never_loses_a_later_row(tmp_path_factory, cut, junk):
    """Whatever a crash or an editor leaves at the end of the file, rows appended afterwards are read back whole."""
    out = tmp_path_factory.mktemp("store")
    store = ResultStore(out)
    store.append(row("a"))
    store.append(row("b"))
    data = store.path("cost").read_bytes()
    store.path("cost").write_bytes(data[:min(cut, len(data))] + junk)
    ResultStore(out).append(row("c"))
    models = [r["model"] for r in ResultStore(out).rows(warn=False)]
    assert models[-1] == "c" and models.count("c") == 1
    assert set(models) <= {"a", "b", "c"}


@pytest.mark.parametrize("extra, message", [
    ({"features": [[96, 56.0, 56]]}, "features holds [96, 56.0, 56], not [C, H, W]"),
    ({"features": [[96, 56]]}, "features holds [96, 56], not [C, H, W]"),
    ({"macs_by_component": {"mlp": 1.5}}, "macs_by_component holds float 1.5, not int"),
    ({"macs_by_component": {"mlp": -1}}, "macs_by_component -1 is out of its bounds [0, 9.22337e+18]"),
    ({"detector_macs_by_part": {"neck": -1}}, "detector_macs_by_part -1 is out of its bounds [0, 9.22337e+18]"),
    ({"bytes_by_op_class": {"norm": -2}}, "bytes_by_op_class -2 is out of its bounds [0, 9.22337e+18]"),
    ({"arithmetic_intensity_by_component": {"mlp": "12"}},
     "arithmetic_intensity_by_component holds str '12', not int or float"),
    ({"uncounted_ops": ["aten.mm", 3]}, "uncounted_ops holds int 3, not str"),
    ({"surprise": 1, "also_new": 2}, "unknown field(s) for a cost row: also_new, surprise"),
])
def test_schema_checks_what_lists_and_dicts_hold_and_says_why_in_one_line(extra, message):
    with pytest.raises(SchemaError) as raised:
        validate(row("a", **extra))
    assert str(raised.value) == message


def test_a_feature_extractor_row_with_per_component_dicts_is_valid():
    fine = row("a", features=[[96, 56, 56], [768, 7, 7]], macs_by_component={"attn_matmul": 0, "mlp": 7},
               arithmetic_intensity_by_component={"mlp": 12.5})
    assert validate(fine) is fine


def test_schema_version_is_checked():
    assert validate(row("a"))["schema"] == SCHEMA_VERSION
    with pytest.raises(SchemaError, match="schema 1 "):
        validate({**row("a"), "schema": 1})


@pytest.mark.parametrize("kind", ["cost", "throughput"])
def test_every_committed_row_makes_its_dataclass_and_serialises_to_the_same_bytes(kind):
    from committed import committed_text
    from zoo.store.schema import ROW_CLASSES

    lines = committed_text(f"results/{kind}.jsonl").splitlines()
    assert len(lines) > 50
    for line in lines:
        typed = ROW_CLASSES[kind](**json.loads(line))
        assert json.dumps(typed.to_json(), sort_keys=True, allow_nan=False) == line


def test_a_misspelt_field_is_refused_by_the_rows_dataclass_on_write_and_on_read(tmp_path):
    from zoo.store.schema import CostRow

    misspelt = {**row("a"), "mac": 1}
    with pytest.raises(SchemaError, match="unknown field.*: mac$"):
        CostRow(**misspelt)
    with pytest.raises(SchemaError, match="unknown field"):
        ResultStore(tmp_path).append(misspelt)
    store = ResultStore(tmp_path)
    store.append(row("a"))
    with open(store.path("cost"), "a") as f:
        f.write(json.dumps(misspelt) + "\n")
    with pytest.warns(UserWarning, match="unknown field"):
        assert [r["model"] for r in store.rows()] == ["a"]


def test_a_typed_row_keeps_absent_fields_absent_and_nulls_null():
    from zoo.store.schema import CostRow, ThroughputRow

    typed = CostRow(**row("a", traceback=None))
    assert typed.macs == 1 and typed.features is None and typed.traceback is None     # every field readable
    assert "features" not in typed.to_json() and typed.to_json()["traceback"] is None
    with pytest.raises(SchemaError, match="unknown kind 'cost'; expected one of throughput"):
        ThroughputRow(**row("a"))
