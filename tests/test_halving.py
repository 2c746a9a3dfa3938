"""Successive halving (programs/compile/halving.py) over scripted programs: which candidates are scored on what."""

from __future__ import annotations

from contextlib import contextmanager

import dspy
import pytest

from bookrag.config import REFUSAL_MESSAGE
from bookrag.questions import Question
from programs.compile.candidates import ZERO_SHOT, Candidate
from programs.compile.halving import dev_subset, score_candidates
from programs.compile.selection import SelectionRule
from programs.evaluate import reports
from programs.refusal.refusal_gate import RefusalGate
from retrievers.passage import Passage

DEV = ([Question(f"a{n}", f"question {n}", True, ("page.md",), (f"fact {n}",), f"It is fact {n}.")
        for n in range(16)]
       + [Question(f"r{n}", f"off-topic {n}", False) for n in range(8)])
BOOTSTRAP_2 = Candidate("bootstrap-2", "bootstrap, 2 demos")
BOOTSTRAP_4 = Candidate("bootstrap-4", "bootstrap, 4 demos")


class ScriptedProgram:
    """Answers every answerable question right (`knows=True`) or refuses every question; records what it was asked.
    Has what `question_row` reads from a BookRAG."""

    top_k, search_mode, generates = 1, "hybrid", False

    def __init__(self, knows: bool):
        self.knows, self.gate, self.asked = knows, RefusalGate(), []

    def __call__(self, question, history=(), selected_text=""):
        self.asked.append(question)
        number = question.split()[-1]
        answers = self.knows and question.startswith("question")
        page = Passage(id="p", score=0.9, text="", title="", heading="", module="", source="page.md", url="",
                       dense_score=0.9)
        return dspy.Prediction(answer=f"It is fact {number}." if answers else REFUSAL_MESSAGE,
                               citations=[1] if answers else [], cited_texts=[None] if answers else [],
                               passages=[page], is_refusal=not answers,
                               refusal_reason=None if answers else "gate", mode="extractive" if answers else "refused",
                               gate={})


@pytest.fixture
def bar_descriptions(monkeypatch):
    """The description of every progress bar the scoring opens, in order."""
    descriptions = []

    @contextmanager
    def recording_bar(description, total, enabled=None):
        descriptions.append(description)
        yield type("Bar", (), {"advance": lambda self, n=1: None})()

    monkeypatch.setattr(reports, "progress_bar", recording_bar)
    return descriptions


def test_a_clearly_worse_candidate_is_dropped_after_the_subset_and_zero_shot_never(bar_descriptions):
    zero_shot, two, four = ScriptedProgram(knows=False), ScriptedProgram(knows=True), ScriptedProgram(knows=False)
    said = []
    scored = score_candidates([(ZERO_SHOT, zero_shot), (BOOTSTRAP_2, two), (BOOTSTRAP_4, four)], DEV,
                              SelectionRule(), progress=False, say=said.append)
    by_name = {s.name: s for s in scored}
    assert list(by_name) == ["zero-shot", "bootstrap-2", "bootstrap-4"]
    # zero-shot is as bad as bootstrap-4 but is the fallback: scored on all of dev
    assert by_name["zero-shot"].dropped is None and len(by_name["zero-shot"].rows) == len(zero_shot.asked) == 24
    assert by_name["bootstrap-2"].dropped is None and len(by_name["bootstrap-2"].rows) == 24
    dropped = by_name["bootstrap-4"].dropped
    assert (dropped.candidate, dropped.baseline, dropped.won) == ("bootstrap-2", "bootstrap-4", True)
    assert len(by_name["bootstrap-4"].rows) == len(four.asked) == 12  # the subset only: half of each kind
    assert said[0].startswith("dev subset (12 of 24 questions): combined zero-shot 0.333, bootstrap-2 1.000, "
                              "bootstrap-4 0.333")
    assert said[1].startswith("dropped bootstrap-4 after the dev subset (bootstrap-2: +0.667 combined over "
                              "bootstrap-4 on 12 questions")
    assert bar_descriptions == ["dev subset: zero-shot", "dev subset: bootstrap, 2 demos",
                                "dev subset: bootstrap, 4 demos", "dev rest: zero-shot", "dev rest: bootstrap, 2 demos"]


def test_every_survivor_is_scored_on_the_same_questions_in_the_same_order():
    programs = [(ZERO_SHOT, ScriptedProgram(knows=False)), (BOOTSTRAP_2, ScriptedProgram(knows=True))]
    scored = score_candidates(programs, DEV, SelectionRule(), progress=False, say=lambda *_: None)
    assert all(s.dropped is None for s in scored)
    assert [r.id for r in scored[0].rows] == [r.id for r in scored[1].rows]
    assert sorted(r.id for r in scored[0].rows) == sorted(q.id for q in DEV)


def test_a_lone_zero_shot_is_scored_on_dev_in_one_pass(bar_descriptions):
    (scored,) = score_candidates([(ZERO_SHOT, ScriptedProgram(knows=True))], DEV, SelectionRule(), progress=False,
                                 say=lambda *_: None)
    assert [r.id for r in scored.rows] == [q.id for q in DEV] and bar_descriptions == ["dev: zero-shot"]


def test_the_dev_subset_is_seeded_and_holds_both_kinds_of_question():
    subset, rest = dev_subset(DEV, SelectionRule(seed=0))
    assert (sum(q.answerable for q in subset), sum(not q.answerable for q in subset)) == (8, 4)
    assert sorted(q.id for q in subset + rest) == sorted(q.id for q in DEV)
    assert [q.id for q in subset] == [q.id for q in DEV if q in subset]  # in dev order
    assert dev_subset(DEV, SelectionRule(seed=0)) == (subset, rest)
    assert dev_subset(DEV, SelectionRule(seed=1))[0] != subset


def test_a_candidate_no_better_than_zero_shot_on_the_subset_is_dropped(bar_descriptions):
    # bootstrap-2 ties zero-shot: not clearly worse than the best, but it cannot win on dev without a gain
    zero_shot, two = ScriptedProgram(knows=True), ScriptedProgram(knows=True)
    said = []
    scored = score_candidates([(ZERO_SHOT, zero_shot), (BOOTSTRAP_2, two)], DEV, SelectionRule(), progress=False,
                              say=said.append)
    dropped = scored[1]
    assert dropped.futile and (dropped.dropped.candidate, dropped.dropped.baseline) == ("zero-shot", "bootstrap-2")
    assert not dropped.dropped.won and len(two.asked) == 12
    assert said[1].startswith("dropped bootstrap-2 after the dev subset: no better than zero-shot there")
    # nothing is left to challenge zero-shot: the rest of dev is not answered
    assert len(zero_shot.asked) == 12 and bar_descriptions == ["dev subset: zero-shot", "dev subset: bootstrap, 2 demos"]
    assert said[2] == "every other candidate dropped: zero-shot kept without answering the rest of dev"
