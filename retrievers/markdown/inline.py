"""Inline Markdown: code spans, links and emphasis, and the plain text a reader sees of them."""

from __future__ import annotations

import re
from collections.abc import Callable

_CODE_SPAN = re.compile(r"(`+).+?\1")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS_UNDERSCORES = re.compile(r"(?<!\w)_+|_+(?!\w)")  # `snake_case` keeps its underscore, `_word_` loses both


def outside_code_spans(text: str, transform: Callable[[str], str]) -> str:
    """`transform` applied to the text between inline code spans; the spans stay verbatim."""
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [transform(text[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join(out) + transform(text[last:])


def plain(markdown: str) -> str:
    """Inline Markdown as a reader sees it: link text without its target, no emphasis marks or code ticks (code
    keeps its underscores and asterisks)."""
    text = outside_code_spans(_LINK.sub(r"\1", markdown), lambda s: _EMPHASIS_UNDERSCORES.sub("", s.replace("*", "")))
    return text.replace("`", "").strip()
