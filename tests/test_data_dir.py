"""Where a user's rows go without --out: the per-user data folder ($ARCHZOO_DATA_DIR here, a fresh one per test
from conftest.py), never the folder the command runs in, so a run inside a checkout leaves its committed
results/ and reports/ alone; the console says where the rows went and how to build the report from them."""
import shlex

from cli import call_main

from zoo.store.data_dir import data_dir

COST = ("--metrics", "cost", "--resolutions", "224")


def test_compare_writes_to_the_user_data_folder_not_the_working_folder(tmp_path, isolated_data_dir):
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    result = call_main("zoo.compare", "--models", "deit_ti", *COST, cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert list(cwd.iterdir()) == []                                   # nothing where the command ran
    assert data_dir() == isolated_data_dir
    rows = (isolated_data_dir / "results" / "cost.jsonl").read_text().splitlines()
    assert len(rows) == 1 and '"deit_ti"' in rows[0]
    hint = (f"zoo.compare: rows appended under {isolated_data_dir / 'results'}; `python -m zoo.report --results "
            f"{shlex.quote(str(isolated_data_dir))}` builds the reports from them")
    assert hint in result.stderr.splitlines()


def test_report_reads_the_user_data_folder_by_default(tmp_path, isolated_data_dir):
    assert call_main("zoo.compare", "--models", "deit_ti", *COST).returncode == 0
    result = call_main("zoo.report", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (isolated_data_dir / "reports" / "cost.md").is_file() and list(tmp_path.iterdir()) == []


def test_report_without_rows_says_how_to_get_them(tmp_path, isolated_data_dir):
    isolated_data_dir.rmdir()
    result = call_main("zoo.report", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line == (f"zoo.report: error: no rows yet in {isolated_data_dir} (where zoo.compare writes by default): "
                    f"run `python -m zoo.compare` first, or give --results DIR (--results . for a checkout's own)")
    assert not isolated_data_dir.exists() and list(tmp_path.iterdir()) == []


def test_out_dot_is_the_explicit_way_into_the_working_folder(tmp_path, isolated_data_dir):
    assert call_main("zoo.compare", "--models", "deit_ti", *COST, "--out", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "results" / "cost.jsonl").is_file() and list(isolated_data_dir.iterdir()) == []
