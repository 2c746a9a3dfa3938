"""The checks a written answer must pass before the user sees it, in order: the model's own verdict, claims the
retrieved passages hold (numbers, versions and names; they also say which passage to cite when the model cited none),
a citation, then the content checks: code the passages show, numbers that belong to the question's subject (or that
a follow-up restates from the turn before it), words from the book rather than from memory, and the kind of value
the question asks for.

One function, `check_answer`, returns the citations to keep and the refusal reason, if any. A quoted (extractive)
answer is the book's own sentences: it cannot state what the passages do not hold, so only its citations are checked.
`CONTENT_CHECKS` are also run one by one by `benchmarks/answer_checks.py`, which measures what each costs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from programs.refusal.asked_value import asked_value
from programs.refusal.claim_check import grounded_citations
from programs.refusal.code_check import unsupported_code
from programs.refusal.content_check import MIN_CONTENT_SUPPORT, content_support
from programs.refusal.reasons import RefusalReason
from programs.refusal.subject_check import values_off_subject
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


def _code_unsupported(question: str, answer: str, passages: list[Passage], history: Sequence[dict]) -> bool:
    return bool(unsupported_code(answer, [p.text_with_heading for p in passages]))


def _value_off_subject(question: str, answer: str, passages: list[Passage], history: Sequence[dict]) -> bool:
    return bool(values_off_subject(answer, question, passages, history))


def _content_unsupported(question: str, answer: str, passages: list[Passage], history: Sequence[dict]) -> bool:
    return content_support(answer, question, [p.text_with_heading for p in passages]) < MIN_CONTENT_SUPPORT


def _asked_value_missing(question: str, answer: str, passages: list[Passage], history: Sequence[dict]) -> bool:
    # Asked for a price, a number or a date and wrote none, or only values of another quantity than the one asked
    # (a gear ratio answered in kg·m²): the passages did not hold it
    asked = asked_value(question)
    return bool(asked) and asked.kind in VALUE_ANSWERS and not asked.answered_by(answer)


# Each reads (question, answer, passages, the earlier turns of the conversation) and says whether the answer fails.
CONTENT_CHECKS: tuple[tuple[RefusalReason, Callable[[str, str, list[Passage], Sequence[dict]], bool]], ...] = (
    (RefusalReason.UNSUPPORTED_CODE, _code_unsupported),
    (RefusalReason.VALUE_OFF_SUBJECT, _value_off_subject),
    (RefusalReason.UNSUPPORTED_CONTENT, _content_unsupported),
    (RefusalReason.NO_ASKED_VALUE, _asked_value_missing),
)


def check_answer(question: str, answer: str, citations: list[int], passages: list[Passage], *,
                 history: Sequence[dict] = (), answerable: bool = True, generated: bool = True) -> AnswerCheck:
    """Keep the answer (with its citations, repaired) or name why it is refused. `history`: the earlier turns
    ({"question", "answer"}); a follow-up's answer may restate the last one."""
    if not answerable:
        return AnswerCheck([], RefusalReason.MODEL)
    if not generated:
        return AnswerCheck(citations) if citations else AnswerCheck([], RefusalReason.NO_CITATION)
    grounded = grounded_citations(answer, [p.text_with_heading for p in passages], citations, question)
    if grounded is None:  # a number, version or name no retrieved passage holds: memory, or a guess
        return AnswerCheck([], RefusalReason.UNSUPPORTED_CLAIM)
    if not grounded:  # cited nothing, and states no number, version or name that would say which passage to cite
        return AnswerCheck([], RefusalReason.NO_CITATION)
    failed = next((reason for reason, fails in CONTENT_CHECKS if fails(question, answer, passages, history)), None)
    return AnswerCheck([] if failed else grounded, failed)
