"""The README says what the code does: its field table is the schema's, its commands exist."""
import re
from pathlib import Path

from zoo.runs.schema import schema_table

README = Path(__file__).resolve().parents[1] / "README.md"


def block(name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", README.read_text(encoding="utf-8"), re.S)
    assert found, f"README.md has no {name} block"
    return found.group(1)


def test_the_field_table_is_generated_from_the_schema():
    assert block("schema-table") == schema_table(), "regenerate: python -c 'from zoo.runs.schema import schema_table'"


def test_exit_codes_are_documented():
    text = README.read_text(encoding="utf-8")
    for code in ("**0**", "**1**", "**2**", "**130**"):
        assert code in text


def test_the_worked_questions_show_zoo_selects_real_output():
    from zoo.answers import load_answers
    from zoo.report.choosing import choosing_markdown

    assert block("choosing") == choosing_markdown(load_answers(README.parent), compact=True), \
        "regenerate: python -c 'from zoo.answers import load_answers; from zoo.report.choosing import " \
        "choosing_markdown; print(choosing_markdown(load_answers(\".\"), True))'"
