"""Query expansion: the multi-part split (rule and predictor), the round-robin merge, HyDE through DummyLM, and
BookRAG searching once per expanded query. Fake embedder, embedded store in tmp_path: no model weights."""

from __future__ import annotations

import logging

import dspy
import pytest
from dspy.utils import DummyLM

from programs.rag.book_rag import BookRAG
from programs.rag.hyde import HyDE
from programs.rag.query_expansion import QuestionParts, interleave, split_question
from retrievers.passage import Passage

TWO_PARTS = "What does the zephyrine reliability profile keep, and which solver does Gazebo use for friction?"


# -- the rule ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, parts", [
    (TWO_PARTS, ["What does the zephyrine reliability profile keep?", "Which solver does Gazebo use for friction?"]),
    ("Which port does the endpoint listen on and which package bridges Gazebo topics?",
     ["Which port does the endpoint listen on?", "Which package bridges Gazebo topics?"]),
    ("At what rate does the IMU publish? How much noise does the simulated IMU add?",
     ["At what rate does the IMU publish?", "How much noise does the simulated IMU add?"]),
    ("What is the sample rate, and at what volume does the node record audio?",
     ["What is the sample rate?", "At what volume does the node record audio?"]),
])
def test_rule_splits_at_and_followed_by_a_question_word(question, parts):
    assert split_question(question) == parts


@pytest.mark.parametrize("question", [
    "How do the RELIABLE and BEST_EFFORT reliability policies differ?",  # "and" joins two nouns
    "What are the maximum step length and the separation between the feet?",
    "Which OpenAI model does the planner call, and why?",  # "why" alone is not a question to search for
    "How tall is the robot?",
])
def test_rule_leaves_single_questions_whole(question):
    assert split_question(question) == []


def test_parts_without_a_hosted_lm_are_the_question_then_its_parts():
    assert QuestionParts()(question=TWO_PARTS) == [TWO_PARTS, *split_question(TWO_PARTS)]
    assert QuestionParts()(question="How tall is the robot?") == ["How tall is the robot?"]


def test_parts_with_a_hosted_lm_come_from_the_predictor():
    lm = DummyLM([{"parts": ["What does zephyrine keep?", "Which Gazebo solver handles friction?"]}])
    with dspy.context(lm=lm):
        queries = QuestionParts()(question=TWO_PARTS)
    assert queries == [TWO_PARTS, "What does zephyrine keep?", "Which Gazebo solver handles friction?"]
    assert TWO_PARTS in lm.history[0]["messages"][-1]["content"]


def test_predictor_returning_one_part_means_no_expansion():
    with dspy.context(lm=DummyLM([{"parts": ["How tall is the robot?"]}])):
        assert QuestionParts()(question="How tall is the robot?") == ["How tall is the robot?"]


# -- the merge --------------------------------------------------------------------------------------------------

def passage(pid: str) -> Passage:
    return Passage(id=pid, score=0.0, text=pid, title="", heading="", module="", source=f"{pid}.md", url="")


def ids(passages) -> list[str]:
    return [p.id for p in passages]


def test_interleave_takes_each_rankings_best_first_without_duplicates():
    rankings = [[passage(x) for x in "abc"], [passage(x) for x in "dae"], [passage(x) for x in "fgh"]]
    assert ids(interleave(rankings, k=5)) == ["a", "d", "f", "b", "g"]  # "a" again at rank 2 is skipped
    assert ids(interleave(rankings, k=20)) == ["a", "d", "f", "b", "g", "c", "e", "h"]


def test_interleave_of_one_ranking_is_that_ranking():
    ranking = [passage(x) for x in "abc"]
    assert interleave([ranking], k=2) == ranking[:2]
    assert interleave([], k=3) == [] and interleave([[], []], k=3) == []


# -- HyDE -------------------------------------------------------------------------------------------------------

def test_hyde_asks_the_lm_for_a_passage_and_searches_with_it():
    lm = DummyLM([{"passage": "The zephyrine profile keeps messages when packets drop."}])
    with dspy.context(lm=lm):
        queries = HyDE()(question="What does zephyrine keep?")
    assert queries == ["What does zephyrine keep?", "The zephyrine profile keeps messages when packets drop."]
    assert "What does zephyrine keep?" in lm.history[0]["messages"][-1]["content"]


def test_hyde_falls_back_to_the_question_when_the_reply_has_no_passage(caplog):
    with dspy.context(lm=DummyLM([{"unrelated": "x"}] * 3)), caplog.at_level(logging.WARNING):
        assert HyDE()(question="What does zephyrine keep?") == ["What does zephyrine keep?"]
    assert "HyDE" in caplog.text


# -- BookRAG ----------------------------------------------------------------------------------------------------

def test_parts_mode_searches_for_the_question_and_each_part(small_index, fake_embedder):
    program = BookRAG(small_index.retriever, lm=None, top_k=4, expand="parts")
    passages = program.retrieve(TWO_PARTS, k=4)
    assert fake_embedder.queries == [TWO_PARTS, *split_question(TWO_PARTS)]
    assert len(passages) <= 4 and len({p.id for p in passages}) == len(passages)
    assert {"01-ros2/01-nodes.md", "02-sim/01-gazebo.md"} <= {p.source for p in passages}


def test_default_searches_once(small_index, fake_embedder):
    program = BookRAG(small_index.retriever, lm=None, top_k=4)
    assert program.expand == "none" and program.expander is None
    program.retrieve(TWO_PARTS, k=4)
    assert fake_embedder.queries == [TWO_PARTS]


def test_hyde_mode_searches_with_the_lms_passage_through_the_whole_program(small_index, fake_embedder):
    hypothetical = "Gazebo simulates friction and contact between links."
    lm = DummyLM([{"passage": hypothetical}])
    program = BookRAG(small_index.retriever, lm=lm, top_k=3, answer_mode="extractive", expand="hyde")
    program.gate.threshold = 0.0  # the gate's decision is not under test
    response = program.ask("How does Gazebo simulate contact?")
    assert fake_embedder.queries == ["How does Gazebo simulate contact?", hypothetical]
    assert len(lm.history) == 1 and not response.is_refusal
    assert "02-sim/01-gazebo.md" in {c.source for c in response.citations}


def test_expansion_adds_saved_state_only_when_in_use():
    """Programs without expansion save exactly what they saved before; `parts` adds its predictor."""
    assert [name for name, _ in BookRAG().named_predictors()] == ["rewrite", "generate.predict"]
    assert "expander.split" in [name for name, _ in BookRAG(expand="parts").named_predictors()]
    assert "expander.write" in [name for name, _ in BookRAG(expand="hyde").named_predictors()]


def test_set_expansion_switches_and_rejects_unknown_modes():
    program = BookRAG()
    program.set_expansion("parts")
    assert isinstance(program.expander, QuestionParts)
    program.set_expansion("none")
    assert program.expander is None
    with pytest.raises(ValueError, match="expand must be one of none, parts, hyde"):
        program.set_expansion("more")
