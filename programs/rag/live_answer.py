"""`LiveAnswer`: the answer on the terminal while the LM writes it, then the checked answer in its place.

    with LiveAnswer(enabled=sys.stdout.isatty()) as live:
        response = program.ask(question, on_answer_text=live.on_text)
    note = live.withdrawal(response)   # say so when the checks withdrew what was on screen

The draft is shown dim and vanishes when the answer is done (rich's transient Live); the caller then prints the
Response, which passed the checks. Showing only checked text would leave the screen empty for the whole answer;
showing the draft and leaving it would let a refused answer stand. So the draft is shown, then replaced, and a
replacement that is not the draft says why in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from bookrag.terminal_text import printable

if TYPE_CHECKING:  # importing `programs` loads DSPy: not before ask.py has read its arguments
    from programs.rag.response import Response

WAITING = "reading the book…"


class LiveAnswer:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.draft = ""
        self._live = None

    @property
    def on_text(self) -> Callable[[str], None] | None:
        """The callback for `program.ask(on_answer_text=...)`; None when disabled, so nothing streams."""
        return self._write if self.enabled else None

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.live import Live
            from rich.spinner import Spinner

            self._live = Live(Spinner("dots", WAITING, style="dim"), console=Console(highlight=False),
                              transient=True, refresh_per_second=12)
            self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()

    def _write(self, piece: str) -> None:
        from rich.text import Text

        self.draft += piece
        self._live.update(Text(printable(self.draft.strip()), style="dim"))  # the model may quote the book's escapes

    def withdrawal(self, response: Response) -> str | None:
        """One line when the final answer is not the draft the user watched being written, else None."""
        from programs.rag.response import ResponseMode
        from programs.refusal.reasons import RefusalReason

        if not self.draft.strip():
            return None
        if response.mode == ResponseMode.QUOTED:
            return "(the model's reply could not be read; below is the book's own sentence)"
        if response.refusal_reason == RefusalReason.UNREADABLE_REPLY:
            return "(the model's reply could not be read as an answer and was withdrawn)"
        if response.is_refusal and response.refusal_reason != RefusalReason.MODEL:  # the LM's own refusal is no retraction
            return f"(the draft answer failed the answer checks ({response.refusal_reason}) and was withdrawn)"
        return None
