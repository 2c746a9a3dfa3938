"""Fenced code blocks: which lines are code, which are prose. Every cleaning step leaves code as it is written."""

from __future__ import annotations

import re
from collections.abc import Iterator

QUOTE_MARKERS = re.compile(r"^ {0,3}(?:>[ ]?)+")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*\{?\.?([\w+-]*)")  # any indent: fences nest in list items; group 2: language


def fence_state(line: str, fence: str | None) -> tuple[str | None, bool]:
    """(new fence state, is this line code). A fence closes only with the same char and at least its length."""
    m = FENCE.match(line)
    if fence is None:
        return (m.group(1), True) if m else (None, False)
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
        return None, True
    return fence, True


def with_code_state(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is code (a fence line or inside a fence)."""
    fence = None
    for line in lines:
        fence, in_code = fence_state(line, fence)
        yield line, in_code


def with_quoted_code_state(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line without its blockquote markers (`> `), with whether it is code: a fence opened in a blockquote is
    read without the markers, while in a fence outside one a `> ...` line is code as written."""
    fence, quoted = None, False
    for line in lines:
        markers = QUOTE_MARKERS.match(line)
        body = line[markers.end() :] if markers and (fence is None or quoted) else line
        if fence is None:
            quoted = bool(markers)
        fence, in_code = fence_state(body, fence)
        yield body, in_code


def outside_fences(lines: list[str]) -> Iterator[str]:
    return (line for line, in_code in with_code_state(lines) if not in_code)


def drop_empty_code_blocks(lines: list[str]) -> list[str]:
    """Fenced blocks with nothing inside (all a dropped include held) would be cited as an empty snippet."""
    out: list[str] = []
    block: list[str] = []
    fence = None
    for line in lines:
        fence, in_code = fence_state(line, fence)
        if not in_code:
            out.append(line)
            continue
        block.append(line)
        if fence is None:  # the closing fence
            if any(inner.strip() for inner in block[1:-1]):
                out += block
            block = []
    return out + block  # a block never closed is kept as it is
