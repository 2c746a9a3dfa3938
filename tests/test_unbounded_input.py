"""Work bounded whatever the input's size: a long question is cut once for every path to an answer (ask, evaluate,
optimize all go through `BookRAG.forward`), reading a question's names is linear in its length, a book's long
heading is shown cut, and JSON nested deeper than Python reads is an error naming the file, not exit 70."""

from __future__ import annotations

import json
import time

import dspy
import pytest

from bookrag.config import Settings
from bookrag.errors import BadArgumentError, DatasetError
from bookrag.output_folder import OutputFolder
from bookrag.questions import Question, load_questions
from programs.cli.train_reader import READER_OUTPUT
from programs.compile.artifact import ARTIFACT_OUTPUT
from programs.evaluate.report_files import REPORT_OUTPUT
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
    pred = dspy.Prediction(answer="Gazebo simulates physics.", citations=[1], cited_texts=[None], passages=[passage],
                           confidence="high",
                           is_refusal=False, refusal_reason=None, mode="extractive", retrieval_time_ms=1.0,
                           generation_time_ms=1.0, query="What does Gazebo do?", gate={})
    response = Response.from_prediction(pred, "What does Gazebo do?", started=time.perf_counter())
    citation = response.citations[0]
    assert citation.title == citation.heading == heading[: MAX_TITLE_CHARS - 1] + "…"
    assert response.passages[0]["heading"] == response.passages[0]["title"] == citation.heading
    assert len(json.dumps(response.to_dict())) < 2_000


# -- JSON nested deeper than Python's reader goes: RecursionError, which the CLIs report as a bug (exit 70) ------

def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("kind", [REPORT_OUTPUT, ARTIFACT_OUTPUT, READER_OUTPUT], ids=lambda kind: kind.name.replace(" ", "-"))
def test_an_out_folder_whose_marker_file_is_nested_200000_deep_is_refused_not_a_crash(tmp_path, kind):
    """evaluate's report.json, optimize's and train_reader's manifest.json: the claim of --out read it whole."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / kind.marker).write_text(nested(200_000))
    with pytest.raises(BadArgumentError) as caught:
        OutputFolder(folder, kind).claim(Settings(book_dir=tmp_path / "book", data_dir=tmp_path / "data"))
    assert caught.value.exit_code == 4
    assert f"--out {folder} holds files that are not a bookrag {kind.name} (no {kind.marker} of ours)" \
        in str(caught.value)
    assert (folder / kind.marker).read_text() == nested(200_000)


def test_a_jsonl_question_line_nested_200000_deep_is_a_question_file_error_naming_the_line(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "What is a node?", "answerable": True}) + "\n"
                    + nested(200_000) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_questions(path)
    assert caught.value.exit_code == 4
    assert str(caught.value) == f"{path}:2: JSON nested too deeply to read; a question line nests a few levels at most"


@pytest.mark.parametrize("column", ["history", "key_facts"])
def test_a_csv_cell_nested_50000_deep_is_a_question_file_error_naming_the_cell(tmp_path, column):
    path = tmp_path / "questions.csv"
    path.write_text(f"id,question,answerable,{column}\nq1,What is a node?,true,{nested(50_000)}\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_questions(path)
    assert caught.value.exit_code == 4
    assert str(caught.value).startswith(f"{path}:2: column {column!r}: expected a JSON array like [\"a\", \"b\"], got "
                                        "one nested too deeply to read ('[[[[")
