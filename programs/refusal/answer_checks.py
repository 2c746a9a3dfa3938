"""The checks a written answer must pass before the user sees it: the LM's own verdict, a citation, and, for a
generated answer, claims the retrieved passages hold and the kind of value the question asks for.

One function, `check_answer`, returns the citations to keep and the refusal reason, if any. A quoted (extractive)
answer is the book's own sentences: it cannot state what the passages do not hold, so only its citations are checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from programs.refusal.asked_value import asked_value
from programs.refusal.claim_check import grounded_citations
from programs.refusal.reasons import RefusalReason
from retrievers.passage import Passage

# The kinds of asked value an answer must state. Not versions: a release is often a name ("Humble", "Harmonic").
VALUE_ANSWERS = ("money", "number", "date")


@dataclass(frozen=True)
class AnswerCheck:
    citations: list[int]  # 1-based passage numbers, repaired to name the passages that hold the claims
    refusal: RefusalReason | None = None

    @property
    def passed(self) -> bool:
        return self.refusal is None


def check_answer(question: str, answer: str, citations: list[int], passages: list[Passage], *,
                 answerable: bool = True, generated: bool = True) -> AnswerCheck:
    """Keep the answer (with its citations, repaired) or name why it is refused."""
    if not answerable:
        return AnswerCheck([], RefusalReason.MODEL)
    if not citations:
        return AnswerCheck([], RefusalReason.NO_CITATION)
    if not generated:
        return AnswerCheck(citations)
    grounded = grounded_citations(answer, [p.cited_text for p in passages], citations)
    if grounded is None:  # a number, version or name no retrieved passage holds: memory, or a guess
        return AnswerCheck([], RefusalReason.UNSUPPORTED_CLAIM)
    if (asked := asked_value(question)) and asked.kind in VALUE_ANSWERS and not asked.held_by(answer):
        # Asked for a price, a number or a date and wrote none: the passages did not hold it
        return AnswerCheck([], RefusalReason.NO_ASKED_VALUE)
    return AnswerCheck(grounded)
