"""Text a book wrote reaches the terminal inert: control characters and escape sequences are shown as escapes;
a typed line that is not UTF-8 is shown with its bad bytes."""

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


def test_text_newlines_tabs_and_other_scripts_are_left_as_they_are():
    text = "Kestrel is 1.2 m tall.\n\tIt weighs 24 kg — «café» 東京 [red]not markup[/red]"
    assert printable(text) == text


def test_a_line_that_is_not_utf8_shows_its_bad_byte_and_good_text_gives_none():
    line = b"How tall is \xff Kestrel?".decode("utf-8", "surrogateescape")
    assert undecodable(line) == "How tall is \\xff Kestrel?"
    assert undecodable("How tall is Kestrel? 東京") is None
