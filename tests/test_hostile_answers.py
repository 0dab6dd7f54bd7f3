"""A crafted results/answers.json and `zoo.select --answers` under hostile conditions (issue 34, finding 5), and
row text that would run in a markdown viewer (finding 10): a real FIFO, a real full tmpfs, real reports."""
import json
import os

import pytest
from cli import call_main
from committed import committed_text

import zoo.select.answers
from zoo.answers.stored import ANSWERS_FILE, read_answers
from zoo.report.build import build_reports
from zoo.select.answers import stale_answers, write_answers

SMALL = [("Under 5 GMACs at 224 px", {"models": "deit_ti,vit_b16", "resolution": "224", "max_gmacs": "5"})]
CRAFTED = {"deep": "[" * 100_000 + "]" * 100_000, "a list of numbers": "[1, 2]",
           "no answer": '[{"question": "q"}]', "NaN": '[{"question": "q", "command": "c", "answer": NaN}]',
           "a question of two lines": json.dumps([{"question": "q\n# injected", "command": "c", "answer": {}}]),
           "an answer without its fields": json.dumps([{"question": "q", "command": "c", "answer": {"query": {}}}])}


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(zoo.select.answers, "QUESTIONS", SMALL)


def _results(tmp_path, answers: str | None = None):
    results = tmp_path / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "cost.jsonl").write_text(committed_text("results/cost.jsonl"))
    if answers is not None:
        (results / ANSWERS_FILE).write_text(answers)
    return tmp_path


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_answers_file_is_reported_not_rendered_and_the_report_still_builds(tmp_path, name):
    folder = _results(tmp_path, CRAFTED[name])
    stored, problem = read_answers(folder)
    assert stored is None and problem.startswith(f"results/{ANSWERS_FILE} is not usable")
    assert stale_answers(folder)[0].startswith(problem)
    # the report's tables and page, without PNG bytes (answers are in no plot); the FIFO test below runs the
    # whole command over a bad answers file
    build_reports(folder, tmp_path / "reports", pictures=False)
    text = (tmp_path / "reports" / "choosing.md").read_text()
    assert "No stored worked answers" in text and "nan" not in text and "injected" not in text


def test_a_fifo_or_symlink_at_answers_json_is_not_opened(tmp_path):
    folder = _results(tmp_path)
    path = folder / "results" / ANSWERS_FILE
    os.mkfifo(path)                                   # opening it for reading would block for ever
    assert read_answers(folder) == (None, f"results/{ANSWERS_FILE} is a FIFO, not a regular file")
    done = call_main("zoo.report", "--results", str(folder), "--out", str(tmp_path / "reports"))
    assert done.returncode == 0, done.stderr
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    assert read_answers(folder)[1] == f"results/{ANSWERS_FILE} is a symlink, not a regular file"


def test_answers_respect_no_save_format_and_the_usual_checks(tmp_path, small):
    done = call_main("zoo.select", "--answers", "--no-save", "--format", "json", "--out", str(tmp_path / "out"))
    assert done.returncode == 0 and not (tmp_path / "out").exists(), done.stderr
    (answer,) = json.loads(done.stdout)
    assert answer["question"] == SMALL[0][0] and [r["model"] for r in answer["answer"]["shortlist"]] == ["deit_ti"]
    done = call_main("zoo.select", "--answers", "--no-save", "--format", "markdown", "--out", str(tmp_path / "out"))
    assert done.stdout.startswith(f"### {SMALL[0][0]}") and "| deit_ti * |" in done.stdout
    for bad in (["--max-gmacs", "-5"], ["--format", "yaml"], ["--dtype", "fp64"]):
        done = call_main("zoo.select", "--answers", *bad, "--out", str(tmp_path / "out"))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / "out").exists()
    done = call_main("zoo.select", "--answers", "--out", str(tmp_path / "out"))
    assert done.returncode == 0 and read_answers(tmp_path / "out")[0][0]["question"] == SMALL[0][0]


def test_a_folder_in_the_way_is_refused_with_one_line(tmp_path, small):
    (tmp_path / "results" / ANSWERS_FILE).mkdir(parents=True)
    done = call_main("zoo.select", "--answers", "--out", str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "folder" in done.stderr
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [ANSWERS_FILE]


def test_a_full_disk_leaves_no_temporary_file_and_the_old_answers_whole(small_fs, small):
    write_answers(small_fs)
    before = (small_fs / "results" / ANSWERS_FILE).read_bytes()
    with open(small_fs / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError:
            pass
    done = call_main("zoo.select", "--answers", "--out", str(small_fs))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "No space left" in done.stderr
    assert sorted(p.name for p in (small_fs / "results").iterdir()) == [ANSWERS_FILE]
    assert (small_fs / "results" / ANSWERS_FILE).read_bytes() == before


def test_row_text_reaches_markdown_and_html_as_text():
    from zoo.console.markdown import markdown_table
    from zoo.report.html import table_html

    table = markdown_table(["cpu"], [["<script>alert(1)</script>\nrow two | & more"]])
    assert "<script>" not in table and len(table.splitlines()) == 3
    assert "&lt;script&gt;" in table_html(table) and "&amp;lt;" not in table_html(table)
