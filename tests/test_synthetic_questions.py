"""The synthetic question set for a book nobody labeled: written from the book with DummyLM, checked against the
book, saved as a CSV the user can correct, and used by `python optimize.py --book DIR` with no `--questions`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import FakeEmbedder, write_book
from dspy.utils import DummyLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.errors import DatasetError
from bookrag.questions import load_questions
from programs.compile.question_writer import AnswerableQuestion
from programs.compile.synthetic_questions import (
    SyntheticCounts,
    synthetic_question_file,
    synthetic_questions,
    write_questions_csv,
)
from retrievers.book_index import BookIndex

PAGES = {
    "kestrel.md": """
        # Kestrel

        Kestrel is the teaching robot of this primer. Kestrel stands 1.2 m tall and has a mass of 24 kg. Every lab
        in the primer runs on Kestrel, and the Zephyr controller keeps Kestrel balanced while it walks across the lab
        floor during the exercises of each chapter.
        """,
    "zephyr.md": """
        # Balance

        The Zephyr controller runs at 500 Hz on the robot. Zephyr reads the joint encoders and the inertial sensor,
        estimates the centre of mass, and commands the ankle joints so that Kestrel does not fall when a student
        pushes it during the balance lab.
        """,
    "gazebo.md": """
        # Simulation

        Gazebo simulates Kestrel before anyone touches the hardware. The simulated world uses a physics step of 1 ms,
        and Gazebo publishes the simulated camera images on the same topics as the real robot, so the Zephyr
        controller runs unchanged in simulation.
        """,
    "launch.md": """
        # Launch

        Launch files start every node of the Kestrel stack at once. The full bringup starts 23 nodes, and the launch
        file passes each node its parameters from a YAML file stored next to the package that Gazebo and the real
        robot both read.
        """,
}
# DummyLM answers by a phrase of the passage in the prompt. The Zephyr reply names a rate the passage does not give.
REPLIES = {
    "stands 1.2 m tall": {"question": "How tall is Kestrel?", "answer": "Kestrel is 1.2 m tall.",
                          "key_facts": ["1.2 m"]},
    "runs at 500 Hz": {"question": "How fast does the Zephyr controller run?", "answer": "At 1000 Hz.",
                       "key_facts": ["1000 Hz"]},
    "physics step of 1 ms": {"question": "What physics step does the simulated world use?",
                             "answer": "A step of 1 ms.", "key_facts": ["physics step of 1 ms"]},
    "starts 23 nodes": {"question": "How many nodes does the full bringup start?", "answer": "23 nodes.",
                        "key_facts": ["23 nodes"]},
}
COUNTS = SyntheticCounts(answerable=4, near_miss=6, out_of_scope=4, injection=2)


@pytest.fixture
def book(tmp_path):
    return write_book(tmp_path / "kestrel-book", PAGES)


@pytest.fixture
def index(settings, book):
    index = BookIndex(settings, book, embedder=FakeEmbedder())
    index.ingest(progress=False)
    yield index
    index.close()


@pytest.fixture
def questions(index):
    import dspy

    with dspy.context(lm=DummyLM(REPLIES)):
        return synthetic_questions(index, AnswerableQuestion(), COUNTS, progress=False)


def test_an_answerable_question_is_kept_only_when_its_key_facts_are_in_its_passage(questions, book):
    answerable = [q for q in questions if q.answerable]
    kept = {"How tall is Kestrel?", "What physics step does the simulated world use?",
            "How many nodes does the full bringup start?"}  # not the Zephyr one: "1000 Hz" is not in its passage
    assert {q.question for q in answerable} == kept
    for q in answerable:  # the gold source is the passage the question was written from
        (source,) = q.gold_sources
        assert all(fact in " ".join((book / source).read_text().split()) for fact in q.key_facts)
        assert q.reference_answer and q.category == "factual"


def test_the_refusals_are_built_from_the_books_topics_and_checked_against_it(questions, book):
    text = " ".join(page.read_text().lower() for page in book.glob("*.md"))
    near_miss = [q for q in questions if q.category == "near-miss"]
    assert near_miss and len(near_miss) <= COUNTS.near_miss
    assert all(any(topic in q.question for topic in ("Kestrel", "Zephyr", "Gazebo")) for q in near_miss)
    assert not any(word in text for word in ("price", "warranty", "founded", "employees"))  # what they ask for
    # "maximum operating temperature of Kestrel" asks for a number, and Kestrel's sentences hold numbers: not kept.
    assert "What is the maximum operating temperature of Kestrel?" not in {q.question for q in near_miss}
    assert {q.category for q in questions if not q.answerable} == {"near-miss", "out-of-scope", "injection"}
    assert len([q for q in questions if q.category == "injection"]) == COUNTS.injection


def test_the_set_is_split_train_dev_with_both_labels_in_each(questions):
    assert {q.split for q in questions} == {"train", "dev"}
    for split in ("train", "dev"):
        assert {q.answerable for q in questions if q.split == split} == {True, False}
    assert len({q.id for q in questions}) == len(questions)


def test_the_csv_has_the_datasets_columns_and_reads_back(questions, tmp_path):
    path = write_questions_csv(questions, tmp_path / "book-questions.csv")
    assert path.read_text().splitlines()[0] == ("id,question,answerable,gold_sources,key_facts,reference_answer,"
                                                "category,history,selected_text,split,style")
    assert load_questions(path) == questions


def test_an_existing_set_is_read_as_it_is_not_rewritten(questions, index, tmp_path):
    """The user may have corrected it: no LM call (an empty DummyLM would fail), the file untouched."""
    path = write_questions_csv(questions, tmp_path / "book-questions.csv")
    before = path.read_bytes()
    assert synthetic_question_file(index, DummyLM([]), path, say=lambda *_: None) == path
    assert path.read_bytes() == before


def test_an_lm_that_writes_nothing_usable_is_a_dataset_error(index, tmp_path):
    ungrounded = {key: reply | {"key_facts": ["nowhere in the book"]} for key, reply in REPLIES.items()}
    with pytest.raises(DatasetError, match="no usable question"):
        synthetic_question_file(index, DummyLM(ungrounded), tmp_path / "q.csv", progress=False, say=lambda *_: None)
    assert not (tmp_path / "q.csv").exists()


def test_optimize_without_questions_writes_the_synthetic_set_beside_the_artifact(book, tmp_path, monkeypatch):
    from programs.cli import optimize

    for name in [k for k in os.environ if k.startswith(("BOOKRAG_", "COHERE_", "QDRANT_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("BOOKRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BOOKRAG_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("retrievers.book_index.make_embedder", lambda settings: FakeEmbedder())
    monkeypatch.setattr("programs.lm.language_model.make_lm", lambda settings: DummyLM(REPLIES))

    assert optimize.main(["--book", str(book), "--answer-mode", "extractive", "--json"]) == 0
    artifact = tmp_path / "artifacts" / "kestrel-book"
    written = tmp_path / "artifacts" / "kestrel-book-questions.csv"
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["dataset"]["labels"] == "synthetic"
    assert Path(manifest["dataset"]["path"]).resolve() == written.resolve()
    questions = load_questions(written)
    assert manifest["dataset"]["train"] == sum(q.split == "train" for q in questions)
    assert {"factual", "near-miss", "out-of-scope", "injection"} <= {q.category for q in questions}
