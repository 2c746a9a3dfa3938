"""`check_answer`: the checks after the LM, as one function of the answer, its citations, the passages and the
question."""

from __future__ import annotations

from programs.refusal.answer_checks import check_answer
from programs.refusal.reasons import RefusalReason
from retrievers.passage import Passage


def passage(text: str, n: int = 1) -> Passage:
    return Passage(id=f"p{n}", score=0.5, text=text, title="Intro", heading="Intro", module="", source=f"{n}.md",
                   url="")


PASSAGES = [passage("Kestrel is 1.2 m tall.", 1), passage("Kestrel has a mass of 24 kg.", 2)]


def test_an_answer_held_by_its_cited_passage_passes_with_its_citations():
    checked = check_answer("How tall is Kestrel?", "Kestrel is 1.2 m tall.", [1], PASSAGES)
    assert checked.passed and checked.citations == [1]


def test_the_models_own_no_is_a_model_refusal():
    assert check_answer("How tall?", "…", [1], PASSAGES, answerable=False).refusal is RefusalReason.MODEL


def test_an_answer_citing_nothing_is_refused():
    assert check_answer("How tall?", "1.2 m.", [], PASSAGES).refusal is RefusalReason.NO_CITATION


def test_a_value_no_retrieved_passage_holds_is_an_unsupported_claim():
    checked = check_answer("How tall is Kestrel?", "Kestrel is 1.5 m tall.", [1], PASSAGES)
    assert checked.refusal is RefusalReason.UNSUPPORTED_CLAIM


def test_a_claim_held_by_an_uncited_passage_gets_that_passage_cited():
    checked = check_answer("How heavy is Kestrel?", "Its mass is 24 kg.", [1], PASSAGES)
    assert checked.passed and checked.citations == [1, 2]


def test_an_asked_number_that_the_answer_does_not_state_is_refused():
    checked = check_answer("How tall is Kestrel?", "Kestrel is a teaching robot.", [1], PASSAGES)
    assert checked.refusal is RefusalReason.NO_ASKED_VALUE


def test_a_quoted_answer_is_only_checked_for_citations():
    checked = check_answer("How tall is Kestrel?", "Kestrel is 9 m tall.", [1], PASSAGES, generated=False)
    assert checked.passed
