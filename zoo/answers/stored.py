"""zoo.select's stored answers: the worked questions' (results/answers.json, written by `python -m zoo.select
--answers`, zoo.select.answers) and the last measured one (results/select-answer.json, zoo.select.cli).

zoo.select writes them and zoo.report renders them, so their format lives here, below both. Each file is read as
strictly as results rows (a regular file, strict JSON, its own schema below, an answer that renders): one that
fails is reported, never rendered.
"""
from __future__ import annotations

import json
from pathlib import Path

ANSWERS_FILE = "answers.json"
# the file's schema: a list of these objects; what render() reads of each answer, and bounds on the rest
ITEM_FIELDS = {"question", "command", "answer"}
ANSWER_FIELDS = {"query": dict, "shortlist": list, "excluded": list, "undecided": list, "pareto": dict}
MAX_QUESTIONS, MAX_TEXT, MAX_BYTES = 100, 2000, 8 << 20


class AnswersError(ValueError):
    """answers.json is not a list of answers zoo.select could have written."""


def answers_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / "results" / ANSWERS_FILE


def write_answers_file(results_dir: str | Path, answers: list[dict]) -> Path:
    """Replace results/answers.json with `answers` atomically (a temporary file renamed over it, removed again
    when the write fails); returns its path."""
    from ..store.safe_io import write_atomic

    path = answers_path(results_dir)
    text = json.dumps(answers, indent=1, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)    # key order kept: the fronts' order is rank order
    write_atomic(path, text)
    return path


def _line(value, what: str) -> None:
    if not isinstance(value, str) or len(value) > MAX_TEXT or any(ch < " " or ch == "\x7f" for ch in value):
        raise AnswersError(f"{what} is not one line of text")


def _check_answer(answer, where: str) -> None:
    if not isinstance(answer, dict):
        raise AnswersError(f"{where}: the answer is {type(answer).__name__}, not an object")
    for key, kind in ANSWER_FIELDS.items():
        if not isinstance(answer.get(key), kind):
            raise AnswersError(f"{where}: answer.{key} is not {'an object' if kind is dict else 'a list'}")
    for row in answer["shortlist"]:
        if not isinstance(row, dict):
            raise AnswersError(f"{where}: a shortlist row is {type(row).__name__}, not an object")
        _line(row.get("model"), f"{where}: a model in answer.shortlist")
    for key in ("excluded", "undecided"):
        for item in answer[key]:
            if not isinstance(item, dict):
                raise AnswersError(f"{where}: answer.{key} holds {type(item).__name__}, not an object")
            _line(item.get("model"), f"{where}: a model in answer.{key}")
            _line(item.get("reason"), f"{where}: a reason in answer.{key}")
    for group, models in answer["pareto"].items():
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise AnswersError(f"{where}: answer.pareto.{group:.40} is not a list of model names")


def check_answers(loaded) -> list[dict]:
    """`loaded` if it is a list of {question, command, answer} that zoo.select could have written and
    that renders; else an AnswersError saying what is wrong (one line)."""
    from .text import render

    if not isinstance(loaded, list) or len(loaded) > MAX_QUESTIONS:
        raise AnswersError(f"not a list of at most {MAX_QUESTIONS} answers")
    for n, item in enumerate(loaded, 1):
        where = f"answer {n}"
        if not isinstance(item, dict) or set(item) != ITEM_FIELDS:
            raise AnswersError(f"{where} is not an object of {', '.join(sorted(ITEM_FIELDS))}")
        _line(item["question"], f"{where}: the question")
        _line(item["command"], f"{where}: the command")
        _check_answer(item["answer"], where)
        try:
            render(item["answer"], "markdown")
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise AnswersError(f"{where} cannot be rendered ({type(e).__name__}: {e})") from None
    return loaded


def _read(results_dir: str | Path, name: str, check):
    """(check(the file's JSON), None), (None, None) without the file, or (None, why it cannot be used): a regular
    file only (a FIFO or link is not opened), strict JSON (no NaN, nesting bounded), what `check` accepts."""
    from ..store.safe_io import read_stored, strict_loads

    label = f"results/{name}"
    text, why = read_stored(Path(results_dir) / "results" / name, label, MAX_BYTES)
    if text is None:
        return None, why
    try:
        return check(strict_loads(text)), None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        return None, f"{label} is not usable ({str(e).splitlines()[0] if str(e) else type(e).__name__})"


def read_answers(results_dir: str | Path) -> tuple[list[dict] | None, str | None]:
    """(the stored answers, None), (None, None) when there are none, or (None, why they cannot be used)."""
    return _read(results_dir, ANSWERS_FILE, check_answers)


SELECT_ANSWER_FILE = "select-answer.json"     # a measured zoo.select answer, kept beside its rows (zoo.select.cli)


def _select_answer(answer) -> dict:
    from .text import render

    _check_answer(answer, SELECT_ANSWER_FILE)
    render(answer, "markdown")
    return answer


def read_select_answer(results_dir: str | Path) -> tuple[dict | None, str | None]:
    """(the last measured zoo.select answer, None), (None, None) without one, or (None, why it cannot be used);
    read as strictly as answers.json (an answer that renders)."""
    return _read(results_dir, SELECT_ANSWER_FILE, _select_answer)


def load_answers(results_dir: str | Path) -> list[dict] | None:
    """The stored answers, or None when results/ holds none or none that can be used (read_answers says why)."""
    return read_answers(results_dir)[0]
