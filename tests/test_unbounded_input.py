"""Work bounded whatever the input's size: a long question is cut once for every path to an answer (ask, evaluate,
optimize all go through `BookRAG.forward`), reading a question's names is linear in its length, and a book's long
heading is shown cut."""

from __future__ import annotations

import json
import time

import dspy

from bookrag.questions import Question
from programs.evaluate.reports import question_row
from programs.rag.book_rag import BookRAG
from programs.rag.bounded_question import MAX_QUERY_CHARS, MAX_QUERY_WORDS
from programs.rag.response import MAX_TITLE_CHARS, Response
from programs.text.query_terms import name_terms
from retrievers.passage import Passage


def test_evaluate_cuts_a_long_question_before_searching_as_ask_does(small_index, fake_embedder):
    """evaluate.py answered the whole question (a 10 MB one ran past 180 s); ask() alone cut it to 500 words."""
    program = BookRAG(small_index.retriever, answer_mode="extractive")
    question = Question("long", "What is a node? " + "robot " * 2_000, answerable=True)
    row = question_row(program, question)
    assert row.error is None and fake_embedder.queries
    assert all(len(query.split()) == MAX_QUERY_WORDS for query in fake_embedder.queries)


def test_a_question_without_spaces_is_cut_to_its_first_characters(small_index, fake_embedder):
    program = BookRAG(small_index.retriever, answer_mode="extractive")
    program(question="x" * 1_000_000)
    assert fake_embedder.queries and {len(query) for query in fake_embedder.queries} == {MAX_QUERY_CHARS}


def test_the_names_of_a_long_text_are_read_in_linear_time():
    """Each word used to slice the whole text before it: 1.2 MB took 78 to 107 s; read once, 0.5 s."""
    text = "The Kestrel walks. " * 64_000  # 1.2 MB
    started = time.perf_counter()
    assert name_terms(text) == ["kestrel"]
    assert time.perf_counter() - started < 5.0


def test_a_long_heading_is_cited_cut_to_200_characters_with_an_ellipsis():
    """A 100 KB heading was printed whole under Sources, and `--json` ran to 300 KB."""
    heading = "Gazebo " + "very " * 20_000 + "long"
    passage = Passage(id="c1", score=0.9, text="Gazebo simulates physics.", title=heading, heading=heading,
                      module="sim", source="sim.md", url="/docs/sim", dense_score=0.9)
    pred = dspy.Prediction(answer="Gazebo simulates physics.", citations=[1], passages=[passage], confidence="high",
                           is_refusal=False, refusal_reason=None, mode="extractive", retrieval_time_ms=1.0,
                           generation_time_ms=1.0, query="What does Gazebo do?", gate={})
    response = Response.from_prediction(pred, "What does Gazebo do?", started=time.perf_counter())
    citation = response.citations[0]
    assert citation.title == citation.heading == heading[: MAX_TITLE_CHARS - 1] + "…"
    assert response.passages[0]["heading"] == citation.heading
    assert len(json.dumps(response.to_dict())) < 2_000
