"""Text on the terminal: what a book, a model or a user wrote, shown without acting on the terminal; and a line
typed in that is not UTF-8, shown so the user can see the bad byte.

A page may hold escape sequences (`ESC[2J` clears the screen, OSC 0 retitles the window, OSC 8 plants a link), and
bidirectional controls (U+202E shows the text after it right to left), which make a citation read as something
it does not say; the answer, the citations, notices and error lines quote the page, and printed raw, piped or not,
the sequence acts. `printable` shows each such character as its escape (`\\x1b[2J`, `\\u202e`): inert, and
still visible to a reader who wonders.
"""

from __future__ import annotations

import re

# C0 (but newline and tab, which text needs), DEL, and C1 (`\x9b` is a one-character CSI on some terminals); the
# bidirectional controls of Unicode's standard set: ALM, LRM and RLM, the embeddings and overrides, the isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Bytes that are not UTF-8 reach Python as lone surrogates (PEP 383, surrogateescape); printing them crashes.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def printable(text: str) -> str:
    """`text` with every control character but newline and tab shown as `\\xNN`, and every bidirectional control
    as `\\uNNNN`."""
    return _CONTROL.sub(lambda match: _escape(ord(match.group())), text)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def undecodable(text: str) -> str | None:
    """None if `text` is valid UTF-8 text; else `text` with its bad bytes shown as `\\xNN`, for the message."""
    if not _UNDECODABLE.search(text):
        return None
    return printable(text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
