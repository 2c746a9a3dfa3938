"""The refusal gate's shipped default calibration: what a zero-shot program refuses with, and that a compiled
program's own gate replaces it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from dspy.utils import DummyLM
from question_files import write_questions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT
from bookrag.file_checksum import file_sha256
from bookrag.questions import load_questions
from programs.compile import default_gate
from programs.rag.book_rag import BookRAG
from programs.refusal import default_calibration
from programs.refusal.calibration import off_topic_cut
from programs.refusal.default_calibration import (
    DEFAULT_CALIBRATION,
    default_provenance,
    default_state,
    write_default_calibration,
)
from programs.refusal.refusal_gate import CALIBRATED_FEATURES, FEATURES, RefusalGate
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy


def features(**values: float) -> dict[str, float]:
    return dict.fromkeys(FEATURES, 0.0) | values


# Retrieval evidence as MiniLM shows it on the labeled books: a covered question, and an off-topic one.
COVERED = features(top_dense=0.65, coverage_top1=0.8, coverage_top3=1.0, value_coverage=0.8)
OFF_TOPIC = features(top_dense=0.15, uncovered_share=1.0, uncovered_terms=4.0, uncovered_names=1.0)


def answers(gate: RefusalGate, f: dict[str, float]) -> bool:
    return gate.probability(f) >= gate.threshold


def test_a_fresh_gate_runs_on_the_shipped_default_calibration():
    shipped = json.loads(DEFAULT_CALIBRATION.read_text())["state"]
    gate = RefusalGate()
    assert gate.weights == shipped["weights"] and gate.threshold == shipped["threshold"]
    assert set(gate.weights) == set(CALIBRATED_FEATURES)
    assert not gate.calibrated  # fitted on other books' questions, not on this one


def test_the_default_answers_covered_questions_and_refuses_off_topic_ones():
    gate = RefusalGate()
    assert answers(gate, COVERED)
    assert not answers(gate, OFF_TOPIC)
    assert gate.probability(COVERED | {"override": 1.0}) < gate.probability(COVERED)


def test_the_default_says_what_it_was_fitted_on():
    provenance = default_provenance()
    assert provenance["features"] == list(CALIBRATED_FEATURES)
    assert provenance["command"] == "make calibration"  # not a benchmark
    assert provenance["policy"] == DEFAULT_POLICY.as_dict()
    assert default_state()["min_top_cosine"] == DEFAULT_POLICY.min_top_cosine
    for source in provenance["fitted_on"]:
        assert (PROJECT_ROOT / source["questions"]).is_file() and source["split"] == "train"
        assert source["answerable"] > 0 and source["must_refuse"] > 0


def test_a_compiled_programs_gate_overrides_the_default(small_index, tmp_path):
    program = BookRAG(small_index.retriever, lm=DummyLM([]), answer_mode="extractive")
    program.gate = RefusalGate.cosine_cut(0.9)
    path = tmp_path / "program.json"
    program.save(str(path))

    loaded = BookRAG(small_index.retriever, lm=DummyLM([]), answer_mode="extractive")
    assert loaded.gate.dump_state() == RefusalGate().dump_state()  # zero-shot: the default
    loaded.load(str(path))
    assert loaded.gate.dump_state() == program.gate.dump_state()
    assert not answers(loaded.gate, COVERED)  # the compiled cut (0.9), not the default, decides
    loaded.gate.reset()  # what a teleprompter does to its student's parameters
    assert loaded.gate.dump_state() == RefusalGate().dump_state()


def test_written_calibration_round_trips(tmp_path, monkeypatch):
    gate = RefusalGate().fit([COVERED] * 6 + [OFF_TOPIC] * 6, [True] * 6 + [False] * 6)
    path = tmp_path / "default.json"
    monkeypatch.setattr(default_calibration, "DEFAULT_CALIBRATION", path)
    try:
        write_default_calibration(gate.dump_state(), {"command": "test"}, path)
        assert default_state() == gate.dump_state() | {"calibrated": False}
        assert default_provenance() == {"command": "test"}
    finally:
        monkeypatch.undo()
        default_calibration._calibration.cache_clear()  # the next reader gets the shipped file again


def test_make_calibration_fits_the_default_on_the_labeled_books_train_and_its_band_on_dev(tmp_path, monkeypatch,
                                                                                            small_book):
    """programs/compile/default_gate.py on one labeled book (the fake embedder): the gate fitted under the policy
    on its train split, its off-topic band on dev, written with what it was fitted on."""
    monkeypatch.setattr("retrievers.book_index.make_embedder", lambda settings: FakeEmbedder())
    questions = write_questions(tmp_path / "questions.csv")
    with questions.open("a", encoding="utf-8") as rows:  # an off-topic dev question: the band is fitted on it
        rows.write("o1,Who painted the Mona Lisa?,false,[],[],,out-of-scope,dev\n")
    monkeypatch.setattr(default_gate, "LABELED_BOOKS", {"small": (small_book, questions)})
    policy = RefusalPolicy(max_false_refusal=0.1, min_top_cosine=0.2)
    said = []
    path = default_gate.rebuild_default_calibration(tmp_path / "data", policy, said.append, tmp_path / "default.json")
    written = json.loads(path.read_text())
    examples = default_gate.book_gate_examples(tmp_path / "data", small_book, questions)
    gate = default_gate.fit_default_gate(examples, policy)
    assert written["state"] == gate.dump_state()
    dev = [e for e in examples if e.question.split == "dev"]
    assert gate.off_topic_below == off_topic_cut(gate, [e.features for e in dev], [e.question for e in dev], policy)
    assert written["policy"] == policy.as_dict() and written["state"]["min_top_cosine"] == 0.2
    train = [q for q in load_questions(questions) if q.split == "train"]
    assert written["fitted_on"] == [{"questions": str(questions), "split": "train", "sha256": file_sha256(questions),
                                     "answerable": sum(q.answerable for q in train),
                                     "must_refuse": sum(not q.answerable for q in train)}]
    assert said == [f"small: gate features of {questions} ..."]


@pytest.mark.parametrize("name", CALIBRATED_FEATURES)
def test_every_calibrated_feature_is_standardized(name):
    state = default_state()
    assert state["scale"][name] > 0 and name in state["mean"]
