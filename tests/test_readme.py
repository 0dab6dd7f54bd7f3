"""The README and docs/ say what the code does: the field table is the schema's, the worked questions are
zoo.select's real output, the exit codes are documented, and the two commands CI runs are on the front page."""
import re
from pathlib import Path

from zoo.store.schema import schema_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def block(name: str, page: Path) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", page.read_text(encoding="utf-8"), re.S)
    assert found, f"{page.relative_to(ROOT)} has no {name} block"
    return found.group(1)


def test_the_field_table_is_generated_from_the_schema():
    assert block("schema-table", DOCS / "results.md") == schema_table(), \
        "regenerate docs/results.md's block from: python -c 'from zoo.store.schema import schema_table; " \
        "print(schema_table())'"


def test_exit_codes_are_documented():
    text = (DOCS / "compare.md").read_text(encoding="utf-8")
    for code in ("**0**", "**1**", "**2**", "**130**", "**143**"):
        assert code in text


def test_the_front_page_holds_the_commands_ci_runs():
    # .ci/run and the hook read the test command from README.md's markers; both must be one shell line there
    for name in ("main-command", "test-command"):
        lines = [line for line in block(name, README).splitlines() if line and not line.startswith("```")]
        assert len(lines) == 1 and lines[0].startswith("python3 -m venv .venv"), name


def test_the_worked_questions_show_zoo_selects_real_output(committed):
    from zoo.answers.stored import load_answers
    from zoo.report.choosing import choosing_markdown

    assert block("choosing", DOCS / "select-reference.md") == choosing_markdown(load_answers(committed), compact=True), \
        "regenerate docs/select-reference.md's block: python -c 'from zoo.answers.stored import load_answers; from " \
        "zoo.report.choosing import choosing_markdown; print(choosing_markdown(load_answers(\".\"), True))'"
