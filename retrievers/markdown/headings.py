"""ATX headings: their text and their anchor (an attribute list's `#id`, else the text's slug)."""

from __future__ import annotations

import re

from retrievers.markdown.inline import plain

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")  # a closing #-run needs a space: "C#" stays
_ATTRIBUTE = r"(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
_ATTRIBUTE_LIST = re.compile(r"\s*\{:?\s*(" + _ATTRIBUTE + r"(?:\s+" + _ATTRIBUTE + r")*)\s*\}\s*$")
_EXPLICIT_ID = re.compile(r"(?:^|\s)#([\w:.-]+)")


def heading(markdown: str) -> tuple[str, str]:
    """(plain text, anchor) of a heading: an attribute list (`{ #id }`, `{#id}`, `{: #id .class }`) is not text,
    and its id, when it gives one, is the anchor; otherwise the anchor is the text's slug."""
    attributes = _ATTRIBUTE_LIST.search(markdown)
    text = plain(markdown[: attributes.start()] if attributes else markdown)
    explicit_id = _EXPLICIT_ID.search(attributes.group(1)) if attributes else None
    return text, explicit_id.group(1) if explicit_id else _anchor(text)


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")
