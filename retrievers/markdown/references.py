"""Reference-style links and footnotes (CommonMark, mdBook, MkDocs): `[text][label]`, `[text][]`, a shortcut
`[label]` with a definition `[label]: url "title"`, a footnote mark `[^1]` and its note `[^1]: text`."""

from __future__ import annotations

import re

from retrievers.markdown.fences import outside_fences, with_code_state
from retrievers.markdown.inline import outside_code_spans

_REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[(?!\^)([^\]]+)\]:[ \t]*<?\S+>?(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?[ \t]*$")
_REFERENCE_LINK = re.compile(r"\[([^\]]+)\]\[([^\]]*)\]")
_SHORTCUT_LINK = re.compile(r"(?<![\]!])\[([^\]^]+)\](?![\[(:])")
_FOOTNOTE_NOTE = re.compile(r"^ {0,3}\[\^([^\]]+)\]:[ \t]*")
_FOOTNOTE_MARK = re.compile(r"[ \t]*\[\^([^\]]+)\]")


def resolve_references(lines: list[str]) -> list[str]:
    """Outside code: a reference link reads as its text, a link definition goes, a footnote mark goes and its note
    stays as a paragraph of its own."""
    prose = list(outside_fences(lines))
    labels = {m.group(1).strip().lower() for m in map(_REFERENCE_DEFINITION.match, prose) if m}
    notes = {m.group(1) for m in map(_FOOTNOTE_NOTE.match, prose) if m}

    # Only what the page defines is resolved: `x[i][j]` or a regex's `[^a-z]` in prose is no link
    def link(m: re.Match) -> str:
        return m.group(1) if (m.group(m.lastindex) or m.group(1)).strip().lower() in labels else m.group(0)

    def inline(text: str) -> str:
        text = _FOOTNOTE_MARK.sub(lambda m: "" if m.group(1) in notes else m.group(0), text)
        return _SHORTCUT_LINK.sub(link, _REFERENCE_LINK.sub(link, text))

    out: list[str] = []
    for line, in_code in with_code_state(lines):
        if in_code:
            out.append(line)
        elif _REFERENCE_DEFINITION.match(line):
            out.append("")
        elif note := _FOOTNOTE_NOTE.match(line):
            out += ["", outside_code_spans(line[note.end():], inline), ""]
        else:
            out.append(outside_code_spans(line, inline))
    return out
