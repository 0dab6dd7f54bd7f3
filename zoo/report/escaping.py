"""How the report writes a row's text in each of its output languages, one helper each, so that no text a row
carries (a device, model or machine name, a source) is ever read as markup or code:

- HTML (index.html): `html.escape` (quotes too: a name can sit in an attribute);
- markdown (the *.md reports): zoo.console.markdown's `markdown_text` in table cells, `markdown_inline` in free text;
- JSON embedded in the page's <script> elements (the views' rows, the plots' data): `json_for_script`;
- the views' own script (views_script.SCRIPT): its `esc`, and inputs found by name without a CSS selector.
"""
from __future__ import annotations

import json


def json_for_script(value) -> str:
    """Strict JSON to inline in a <script> element: no "</" (it would end the element early) and no "<!--" (it
    would let a later "<script" swallow the element's real end tag). Both only occur inside JSON strings, where
    "<\\/" and "\\u003c" read back as the same text."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")
