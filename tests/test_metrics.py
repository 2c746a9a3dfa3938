"""The per-question metrics that both the evaluation report and optimize.py use: key facts, refusals, citations,
the combined compile metric and its GEPA feedback variant. Pure functions: no index, no model."""

from __future__ import annotations

import dspy
import pytest

from bookrag.config import REFUSAL_MESSAGE, Settings
from bookrag.questions import Question
from programs.evaluate.metrics import (
    answer_correct,
    answer_tokens,
    citation_precision,
    citation_recall,
    citation_validity,
    combined_score,
    fact_present,
    feedback_score,
    key_fact_recall,
    refusal_correct,
    semantic_f1,
    token_f1,
)
from retrievers.passage import Passage


def passage(source: str) -> Passage:
    return Passage(id=f"id-{source}", score=0.5, text="", title="", heading="", module="", source=source, url="",
                   dense_score=0.5)


REFERENCE = "Kestrel is 1.2 m tall and has a mass of 24 kg."
BURIED = ("Kestrel is the course's teaching robot, built so that students can run every exercise of the book on "
          "real hardware after trying it in simulation first. Its onboard computer runs the whole ROS 2 stack, and "
          "its software is organized as packages whose names begin with kestrel. It stands 1.2 m tall, has a mass "
          "of 24 kg, and carries a stereo camera, an IMU and foot force sensors, with 28 degrees of freedom.")


def example(answerable=True, key_facts=("1.2 m", "24 kg"), gold=("intro.md",), selected_text="",
            reference=REFERENCE) -> dspy.Example:
    return Question("q1", "How tall and heavy is Kestrel?", answerable, tuple(gold) if answerable else (),
                    tuple(key_facts) if answerable else (), reference if answerable else "",
                    selected_text=selected_text).to_example()


def prediction(answer="Kestrel is 1.2 m tall and weighs 24 kg.", citations=(1,),
               sources=("intro.md", "01-ros2/nodes.md")) -> dspy.Prediction:
    return dspy.Prediction(answer=answer, citations=list(citations), passages=[passage(s) for s in sources],
                           is_refusal=False, mode="extractive", gate={"probability": 0.9, "threshold": 0.5})


def refusal() -> dspy.Prediction:
    return dspy.Prediction(answer=REFUSAL_MESSAGE, citations=[], passages=[passage("intro.md")], is_refusal=True,
                           refusal_reason="gate", mode="refused", gate={"probability": 0.1, "threshold": 0.5})


# -- key facts -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("fact", "answer"), [
    ("50 GB", "It needs 50gb of disk."),
    ("50gb", "It needs 50 GB of disk."),
    ("1.2 m", "Kestrel stands 1.2m tall."),
    ("ROS 2 Jazzy", "targets ros 2\n   jazzy on Ubuntu"),
    ("BEST_EFFORT", "reliability is best_effort"),
    ("1000 Hz", "physics runs at 1000\u00a0Hz"),  # a non-breaking space from a copied page
])
def test_fact_matching_ignores_case_whitespace_and_number_unit_spacing(fact, answer):
    assert fact_present(fact, answer)


def test_a_fact_given_as_alternatives_is_present_when_any_alternative_is():
    assert fact_present(("1.2 m", "1.2 meters"), "Kestrel is 1.2 meters tall.")
    assert fact_present(("1.2 m", "1.2 meters"), "Kestrel is 1.2m tall.")
    assert not fact_present(("1.2 m", "1.2 meters"), "Kestrel is 1.5 meters tall.")
    assert key_fact_recall((("1.2 m", "1.2 meters"), "24 kg"), "It is 1.2 meters tall.") == 0.5


@pytest.mark.parametrize(("fact", "answer"), [
    ("50 GB", "It needs 5 GB of disk."),
    ("24 kg", "It weighs 42 kg."),
    ("DAMPED", "It starts standing."),
])
def test_fact_matching_still_tells_different_facts_apart(fact, answer):
    assert not fact_present(fact, answer)


def test_key_fact_recall_is_the_share_of_facts_present():
    assert key_fact_recall(["1.2 m", "24 kg"], "It is 1.2 m tall.") == 0.5
    assert key_fact_recall([], "anything") == 1.0


def test_answer_correct_needs_every_key_fact_and_no_refusal():
    assert answer_correct(example(), prediction())
    assert not answer_correct(example(), prediction(answer="Kestrel is 1.2 m tall."))
    assert not answer_correct(example(), refusal())
    assert not answer_correct(example(answerable=False), prediction())  # nothing is correct to answer


# -- refusals ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("answerable", "refused", "correct"), [
    (False, True, True),  # must refuse, refused
    (False, False, False),  # must refuse, answered
    (True, False, True),  # answerable, answered (whatever the facts)
    (True, True, False),  # answerable, falsely refused
])
def test_refusal_correct(answerable, refused, correct):
    assert refusal_correct(example(answerable=answerable), refusal() if refused else prediction()) is correct


# -- citations -----------------------------------------------------------------------------------------------

def test_citation_validity_is_the_share_of_cited_numbers_naming_a_retrieved_passage():
    assert citation_validity(prediction(citations=[1, 2])) == 1.0
    assert citation_validity(prediction(citations=[1, 3])) == 0.5  # two passages retrieved: 3 names none
    assert citation_validity(prediction(citations=[0, 7])) == 0.0
    assert citation_validity(prediction(citations=[1, 1, 9])) == 0.5  # a repeated number counts once


def test_citation_validity_counts_nothing_cited_and_selected_text_answers_as_valid():
    assert citation_validity(refusal()) == 1.0
    assert citation_validity(prediction(citations=[], sources=())) == 1.0  # selected text: no passages


def test_citation_precision_and_recall_against_gold_sources():
    two_gold = example(gold=("intro.md", "01-ros2/nodes.md"))
    assert citation_precision(example(), prediction(citations=[1, 2])) == 0.5
    assert citation_recall(example(), prediction(citations=[1, 2])) == 1.0
    assert citation_precision(two_gold, prediction(citations=[2])) == 1.0
    assert citation_recall(two_gold, prediction(citations=[2])) == 0.5
    assert citation_precision(example(), prediction(citations=[2, 5])) == 0.0  # 5 names no passage


def test_citation_precision_and_recall_when_nothing_is_cited_or_nothing_is_gold():
    must_refuse = example(answerable=False)
    assert (citation_precision(must_refuse, refusal()), citation_recall(must_refuse, refusal())) == (1.0, 1.0)
    assert (citation_precision(example(), refusal()), citation_recall(example(), refusal())) == (0.0, 0.0)
    assert citation_precision(must_refuse, prediction(citations=[1])) == 0.0  # cited a page for nothing


# -- the combined compile metric -----------------------------------------------------------------------------

def test_combined_score_for_must_refuse_questions():
    assert combined_score(example(answerable=False), refusal()) == 1.0
    assert combined_score(example(answerable=False), prediction()) == 0.0


def test_token_f1_counts_shared_words_and_keeps_numbers_and_names_whole():
    assert token_f1(REFERENCE, REFERENCE) == pytest.approx(1.0)
    assert token_f1(REFERENCE, "Nothing in common here.") == 0.0
    assert token_f1(REFERENCE, "") == 0.0
    assert answer_tokens("It uses rmw_cyclonedds_cpp at 1.2 m, best-effort.") == [
        "it", "uses", "rmw_cyclonedds_cpp", "at", "1.2m", "best-effort"]
    # 6 shared of 7 answer words and 9 reference words (articles dropped): P 6/7, R 6/9
    assert token_f1(REFERENCE, "Kestrel is 1.2 m tall and weighs 24 kg.") == pytest.approx(2 * (6 / 7) * (6 / 9) / (
        6 / 7 + 6 / 9))


def test_combined_score_for_answerable_questions():
    assert combined_score(example(), refusal()) == 0.0
    assert combined_score(example(), prediction(answer=REFERENCE)) == pytest.approx(1.0)
    # every fact (0.4) + F1 0.75 (0.3) + valid citations (0.1) + a gold source cited (0.1)
    assert combined_score(example(), prediction()) == pytest.approx(0.4 + 0.4 * 0.75 + 0.2)
    # every fact, but half the citations invalid (0.05) and no gold source cited (0.0)
    assert combined_score(example(), prediction(answer=REFERENCE, citations=[2, 9])) == pytest.approx(0.85)


def test_a_fact_buried_in_unrelated_text_scores_below_the_fact_stated():
    stated, buried = prediction(answer=REFERENCE), prediction(answer=BURIED)
    assert key_fact_recall(example().key_facts, BURIED) == 1.0  # key facts alone cannot tell them apart
    assert combined_score(example(), buried) < combined_score(example(), stated) - 0.25


def test_combined_score_gives_full_gold_credit_when_there_is_no_gold_source_to_cite():
    assert combined_score(example(gold=()), prediction(answer=REFERENCE, citations=[2])) == pytest.approx(1.0)
    selected = example(selected_text="Kestrel is 1.2 m tall and has a mass of 24 kg.")
    assert combined_score(selected, prediction(answer=REFERENCE, citations=[], sources=())) == pytest.approx(1.0)


def test_combined_score_is_a_bool_when_dspy_bootstraps_with_a_trace():
    """Only correct, cited and concise answers become demos."""
    assert combined_score(example(), prediction(), trace=[]) is True
    assert combined_score(example(), prediction(answer=BURIED), trace=[]) is False  # right but buried
    assert combined_score(example(), prediction(answer="It is 1.2 m tall."), trace=[]) is False  # half the facts
    assert combined_score(example(answerable=False), refusal(), trace=[]) is True


def test_a_refusal_demo_needs_the_model_itself_to_refuse():
    """A wrong answer turned into a refusal by a later check (an unsupported claim) must not become a demo."""
    refused_by_check = refusal()
    refused_by_check.refusal_reason = "unsupported_claim"
    assert combined_score(example(answerable=False), refused_by_check) == 1.0  # still right for the user
    assert combined_score(example(answerable=False), refused_by_check, trace=[]) is False
    refused_by_model = refusal()
    refused_by_model.refusal_reason = "model"
    assert combined_score(example(answerable=False), refused_by_model, trace=[]) is True


# -- the GEPA feedback variant -------------------------------------------------------------------------------

def test_feedback_names_the_missing_key_facts_and_matches_the_combined_score():
    result = feedback_score(example(), prediction(answer="It is 1.2 m tall."))
    assert isinstance(result, dspy.Prediction)
    assert result.score == pytest.approx(combined_score(example(), prediction(answer="It is 1.2 m tall.")))
    assert "24 kg" in result.feedback and "1.2 m" not in result.feedback


def test_feedback_says_what_went_wrong_with_refusals_and_citations():
    assert "Refused an answerable question" in feedback_score(example(), refusal()).feedback
    assert "Answered a must-refuse question" in feedback_score(example(answerable=False), prediction()).feedback
    bad_citations = feedback_score(example(), prediction(citations=[2, 9])).feedback
    assert "Cited passage(s) 9, which were not retrieved" in bad_citations
    assert "Did not cite a gold source (intro.md)" in bad_citations


def test_feedback_asks_for_a_shorter_answer_when_the_fact_is_buried():
    assert "state the fact, leave out the rest" in feedback_score(example(), prediction(answer=BURIED)).feedback


def test_feedback_on_a_correct_prediction_names_no_problem():
    result = feedback_score(example(), prediction(answer=REFERENCE), trace=None, pred_name="generate", pred_trace=[])
    assert result.score == pytest.approx(1.0) and result.feedback.startswith("Correct")


# -- the optional LM-judged metric ---------------------------------------------------------------------------

def test_semantic_f1_is_the_harmonic_mean_of_the_judges_precision_and_recall():
    from dspy.utils import DummyLM

    judge = DummyLM([{"reasoning": "Half the reference is covered.", "recall": 0.5, "precision": 1.0}])
    assert semantic_f1(example(), prediction(), judge) == pytest.approx(2 / 3)
    assert "Kestrel is 1.2 m tall and weighs 24 kg." in str(judge.history[0]["messages"])


def test_semantic_f1_refuses_the_local_model_as_a_judge():
    from programs.lm.language_model import make_lm

    local = make_lm(Settings())  # the in-process engine; it loads nothing until called
    with pytest.raises(ValueError, match="hosted judge"):
        semantic_f1(example(), prediction(), local)
