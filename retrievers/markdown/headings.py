"""Headings: ATX headings' text and anchor (an attribute list's `#id`, else the text's slug), and setext headings
written as ATX headings."""

from __future__ import annotations

import re

from retrievers.markdown.fences import with_code_state
from retrievers.markdown.inline import plain

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")  # a closing #-run needs a space: "C#" stays
_ATTRIBUTE = r"(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
_ATTRIBUTE_LIST = re.compile(r"\s*\{:?\s*(" + _ATTRIBUTE + r"(?:\s+" + _ATTRIBUTE + r")*)\s*\}\s*$")
_EXPLICIT_ID = re.compile(r"(?:^|\s)#([\w:.-]+)")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")
# A line that may be a setext heading's text: not indented, and no list item, quote, table row, HTML, ATX heading
# or underline
_SETEXT_TEXT = re.compile(r"^(?![*+](?:\s|$)|\d{1,9}[.)](?:\s|$)|[-=>|<#])\S")


def setext_as_atx(lines: list[str]) -> list[str]:
    """A setext heading (`Title` over `===` or `---`) as an ATX one (`# Title`, `## Title`), so sections and titles
    find it. Only a paragraph of one line, after a blank line, is read as a heading's text: `---` after a blank
    line, a list item or code is a rule or code."""
    out: list[str] = []
    states = list(with_code_state(lines))
    for at, (line, in_code) in enumerate(states):
        underline = None if in_code else _SETEXT_UNDERLINE.match(line)
        text, text_in_code = states[at - 1] if at else ("", True)
        if underline and not text_in_code and _SETEXT_TEXT.match(text) and (at == 1 or not lines[at - 2].strip()):
            out[-1] = f"{'#' if underline.group(1)[0] == '=' else '##'} {text.strip()}"
        else:
            out.append(line)
    return out


def heading(markdown: str) -> tuple[str, str]:
    """(plain text, anchor) of a heading: an attribute list (`{ #id }`, `{#id}`, `{: #id .class }`) is not text,
    and its id, when it gives one, is the anchor; otherwise the anchor is the text's slug."""
    attributes = _ATTRIBUTE_LIST.search(markdown)
    text = plain(markdown[: attributes.start()] if attributes else markdown)
    explicit_id = _EXPLICIT_ID.search(attributes.group(1)) if attributes else None
    return text, explicit_id.group(1) if explicit_id else _anchor(text)


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")
