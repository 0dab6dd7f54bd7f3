"""The front page and docs/ hold together: every relative link reaches an existing file (and heading, for a
`#anchor` into a markdown page), every page under docs/ is reachable from README.md, and the front page
stays short (issue 30: under 16 KB)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FRONT_PAGE_LIMIT = 16 * 1024      # bytes

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")         # [text](target), images aside
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def links(page: Path) -> list[str]:
    """Link targets in the page's prose (fenced and inline code hold commands, not links)."""
    return LINK.findall(CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8"))))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")   # a repeated heading gets -1, -2, ...
        seen[base] = seen.get(base, 0) + 1
    return found


def is_relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)      # http:, https:, mailto: are not checked here


def resolve(page: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return ((page.parent / path).resolve() if path else page), anchor


def test_the_slug_is_githubs():
    assert slug("Set up and run (fresh machine, Python >= 3.10)") == "set-up-and-run-fresh-machine-python--310"
    assert slug("Comparing: `python -m zoo.compare`") == "comparing-python--m-zoocompare"
    assert slug("Whole detectors: `--detector maskrcnn|cascade_maskrcnn`") == \
        "whole-detectors---detector-maskrcnncascade_maskrcnn"


def test_the_link_finder_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[a](x.md) `[b](y.md)` ![img](z.png)\n```\n[c](w.md)\n```\n[d](https://e.org) [f](#top)\n")
    assert links(page) == ["x.md", "https://e.org", "#top"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(page):
    broken = []
    for target in filter(is_relative, links(page)):
        path, anchor = resolve(page, target)
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: {path.name} has no heading with anchor #{anchor}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_every_docs_page_is_reachable_from_the_front_page():
    reached, todo = {README.resolve()}, [README]
    while todo:
        page = todo.pop()
        for target in filter(is_relative, links(page)):
            path, _ = resolve(page, target)
            if path.suffix == ".md" and path.exists() and path not in reached:
                reached.add(path)
                todo.append(path)
    orphans = [p.relative_to(ROOT) for p in PAGES if p.resolve() not in reached]
    assert orphans == [], f"pages under docs/ no link from README.md leads to: {orphans}"


def test_the_front_page_is_short():
    size = len(README.read_bytes())
    assert size < FRONT_PAGE_LIMIT, f"README.md is {size:,} bytes; move detail under docs/ (limit {FRONT_PAGE_LIMIT:,})"
