"""Text a book wrote reaches the terminal inert: control characters, escape sequences and bidirectional controls
are shown as escapes; a typed line that is not UTF-8 is shown with its bad bytes."""

from __future__ import annotations

import pytest

from bookrag.terminal_text import printable, undecodable

ESC, BEL, CSI = "\x1b", "\x07", "\x9b"


@pytest.mark.parametrize("raw, shown", [
    (f"{ESC}[2Jcleared", "\\x1b[2Jcleared"),  # clear the screen
    (f"{ESC}[31mred{ESC}[0m", "\\x1b[31mred\\x1b[0m"),  # colour
    (f"{ESC}]0;pwned{BEL}title", "\\x1b]0;pwned\\x07title"),  # OSC 0: the window title
    (f"{ESC}]8;;https://evil.example{ESC}\\click{ESC}]8;;{ESC}\\", ("\\x1b]8;;https://evil.example\\x1b\\click"
                                                                   "\\x1b]8;;\\x1b\\")),  # OSC 8: a hyperlink
    (f"{CSI}2J", "\\x9b2J"),  # C1: a one-character CSI
    ("over\rwrite\b\x00\x7f", "over\\x0dwrite\\x08\\x00\\x7f"),
])
def test_control_characters_and_escape_sequences_are_shown_as_escapes(raw, shown):
    assert printable(raw) == shown
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f for c in printable(raw))


@pytest.mark.parametrize("control", ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202a, 0x202f)),
                                     *map(chr, range(0x2066, 0x206a))])
def test_bidirectional_controls_are_shown_as_escapes(control):
    """U+202E shows the heading `Limits of <U+202E>gnp.exe` as "Limits of exe.png": it says what it is not."""
    assert printable(f"Limits of {control}gnp.exe") == f"Limits of \\u{ord(control):04x}gnp.exe"


def test_text_newlines_tabs_and_other_scripts_are_left_as_they_are():
    text = "Kestrel is 1.2 m tall.\n\tIt weighs 24 kg — «café» 東京 [red]not markup[/red]"
    assert printable(text) == text


def test_a_line_that_is_not_utf8_shows_its_bad_byte_and_good_text_gives_none():
    line = b"How tall is \xff Kestrel?".decode("utf-8", "surrogateescape")
    assert undecodable(line) == "How tall is \\xff Kestrel?"
    assert undecodable("How tall is Kestrel? 東京") is None
