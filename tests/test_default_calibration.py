"""The refusal gate's shipped default calibration: what a zero-shot program refuses with, and that a compiled
program's own gate replaces it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from dspy.utils import DummyLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT
from programs.rag.book_rag import BookRAG
from programs.refusal import default_calibration
from programs.refusal.default_calibration import (
    DEFAULT_CALIBRATION,
    default_provenance,
    default_state,
    write_default_calibration,
)
from programs.refusal.refusal_gate import CALIBRATED_FEATURES, FEATURES, RefusalGate


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
    assert provenance["command"].startswith("python benchmarks/refusal_transfer.py")
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


@pytest.mark.parametrize("name", CALIBRATED_FEATURES)
def test_every_calibrated_feature_is_standardized(name):
    state = default_state()
    assert state["scale"][name] > 0 and name in state["mean"]
