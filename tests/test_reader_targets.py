"""What the reader is taught for each kind of training question, RAFT's way: the fact in any passage, refusals among
distractors, replies in the reader's own words where they are right (kept in a reply file), else hinted, else the
reference. The tiny book and DummyLM: no model is loaded."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from dspy.utils import DummyLM
from tiny_book import generated

from bookrag.config import REFUSAL_MESSAGE
from bookrag.errors import DatasetError
from bookrag.questions import Question
from programs.compile.reader_replies import ReplyFile, reply_key
from programs.compile.reader_targets import NO_PASSAGE, plan_target, reader_target
from programs.evaluate.metrics import fact_present

TALL = Question("q1", "How tall is Quillon the teaching robot?", True, ("intro.md",), ("1.4 m",),
                "Quillon is 1.4 m tall.", "factual", style="book-words")
BOOK = "tiny"


def answer_plan(program, question=TALL):
    """The plan of `question` under the first seed that teaches it an answer (not the refusal among distractors)."""
    return next(plan for seed in range(50) if (plan := plan_target(program, question, BOOK, seed)).source == "answer")


def holding(plan) -> set[int]:
    return {n for n, text in plan.inputs.sentences if any(fact_present(f, text) for f in plan.question.key_facts)}


def test_a_must_refuse_question_is_taught_the_refusal(make):
    plan = plan_target(make(), Question("r1", "What is the retail price of Quillon?", False), BOOK, 0)
    target = reader_target(make(), plan, BOOK, None)
    assert target.source == "refusal"
    assert target.outputs == {"reasoning": NO_PASSAGE, "answer": REFUSAL_MESSAGE, "citations": [],
                              "answerable": False}


def test_the_passage_holding_the_fact_lands_on_every_number(make):
    """Best-first, Quillon's height is in passage 1; shown, it is on each of 1..3 about equally often."""
    program = make(k=3)
    plans = [plan_target(program, TALL, BOOK, seed) for seed in range(150)]
    answers = [p for p in plans if p.source == "answer"]
    assert {p.fact_passage[0] for p in answers} == {1}
    shown = Counter(p.fact_passage[1] for p in answers)
    assert set(shown) == {1, 2, 3} and min(shown.values()) >= len(answers) / 5
    for plan in answers:  # the context shows the fact under its new number
        assert plan.fact_passage[1] in holding(plan)
        block = plan.inputs.context.split(f"[{plan.fact_passage[1]}] ")[1].split("\n\n")[0]
        assert "1.4 m" in block


def test_one_answerable_question_in_five_is_taught_to_refuse_without_its_passages(make):
    program = make(k=3)
    plans = [plan_target(program, TALL, BOOK, seed) for seed in range(100)]
    distractors = [p for p in plans if p.source == "distractors"]
    assert 10 <= len(distractors) <= 30
    for plan in distractors:
        assert "1.4 m" not in plan.inputs.context and "Quillon" not in plan.inputs.context
        assert reader_target(program, plan, BOOK, None).outputs["answerable"] is False


def test_without_replies_the_target_is_the_reference_quoting_the_fact_under_its_shown_number(make):
    plan = answer_plan(make(k=3))
    target = reader_target(make(), plan, BOOK, None)
    shown = plan.fact_passage[1]
    assert target.source == "reference" and target.fact_passage == plan.fact_passage
    assert target.outputs["reasoning"].startswith(f'Passage {shown} states "') and "1.4 m" in target.outputs["reasoning"]
    assert target.outputs["answer"] == TALL.reference_answer and target.outputs["citations"] == [shown]


def test_an_answerable_question_whose_context_lacks_every_fact_is_taught_to_refuse(make):
    lacking = Question("q2", TALL.question, True, ("intro.md",), ("2.7 m",), "It is 2.7 m.")
    plan = plan_target(make(), lacking, BOOK, 0)
    assert plan.source == "missing" and reader_target(make(), plan, BOOK, None).outputs["answerable"] is False


def test_a_question_whose_context_holds_only_some_facts_is_left_out(make):
    partly = Question("q3", TALL.question, True, ("intro.md",), ("1.4 m", "2.7 m"), "x")
    assert plan_target(make(), partly, BOOK, 0) is None


def test_the_readers_own_right_reply_is_the_target_and_is_asked_once(make, tmp_path):
    plan = answer_plan(make(k=3))
    own = generated(answer="Quillon stands 1.4 m tall.", citations=[plan.fact_passage[1]])
    program = make(lm=DummyLM([own]), k=3)
    replies = ReplyFile(tmp_path / "replies.jsonl", "model-a")
    target = reader_target(program, plan, BOOK, replies)
    assert target.source == "own" and target.outputs["answer"] == "Quillon stands 1.4 m tall."
    assert target.inputs == plan.inputs.fields()
    again = reader_target(make(lm=DummyLM([]), k=3), plan, BOOK, ReplyFile(tmp_path / "replies.jsonl", "model-a"))
    assert again == target  # read from the file: the LM, which has no reply left, was not asked
    saved = [json.loads(line) for line in (tmp_path / "replies.jsonl").read_text().splitlines()]
    assert [r["key"] for r in saved] == [reply_key(BOOK, "q1", plan.order, hinted=False)]
    assert "Quillon is 1.4 m tall and weighs" not in json.dumps(saved)  # the reply, never the book's text


@pytest.mark.parametrize("why", ["wrong fact", "no verdict", "too long"])
def test_a_wrong_own_reply_gives_way_to_the_hinted_one_taught_without_the_hint(make, tmp_path, why):
    plan = answer_plan(make(k=3))
    shown = plan.fact_passage[1]
    wrong = {"wrong fact": generated(answer="Quillon is 2 m tall.", citations=[shown]),
             "no verdict": generated(answerable=False),
             "too long": generated(answer="Quillon is 1.4 m tall" + " and very tall" * 12 + ".", citations=[shown])}[why]
    hinted = generated(answer="Quillon is 1.4 m tall, the book says.", citations=[shown])
    lm = DummyLM([wrong, hinted])
    target = reader_target(make(lm=lm, k=3), plan, BOOK, ReplyFile(tmp_path / "r.jsonl", "m"))
    assert target.source == "hinted" and target.outputs["answer"] == "Quillon is 1.4 m tall, the book says."
    assert "Hint" in lm.history[1]["messages"][-1]["content"] and "Hint" not in target.inputs["question"]


@pytest.mark.parametrize("pointing", ["cites", "names"])
def test_a_right_answer_pointing_at_the_wrong_passage_is_taught_behind_the_right_pointing(make, tmp_path, pointing):
    plan = answer_plan(make(k=3))
    shown, elsewhere = plan.fact_passage[1], min(n for n in range(1, 4) if n not in holding(plan))
    reply = generated(answer="Quillon stands 1.4 m tall.", citations=[elsewhere if pointing == "cites" else shown])
    if pointing == "names":
        reply["reasoning"] = f"Passage {elsewhere} gives his height."
    lm = DummyLM([reply])
    target = reader_target(make(lm=lm, k=3), plan, BOOK, ReplyFile(tmp_path / "r.jsonl", "m"))
    assert target.source == "own answer" and len(lm.history) == 1  # no hint asked for
    assert target.outputs["answer"] == "Quillon stands 1.4 m tall."
    assert target.outputs["citations"] == [shown] and target.outputs["reasoning"].startswith(f"Passage {shown} states")


def test_the_reference_is_the_target_when_both_replies_are_wrong(make, tmp_path):
    plan = answer_plan(make(k=3))
    wrong = generated(answer="Quillon is 2 m tall.", citations=[plan.fact_passage[1]])
    target = reader_target(make(lm=DummyLM([wrong, wrong]), k=3), plan, BOOK, ReplyFile(tmp_path / "r.jsonl", "m"))
    assert target.source == "reference" and target.outputs["answer"] == TALL.reference_answer


def test_a_reply_to_another_model_or_prompt_is_asked_again(make, tmp_path):
    plan = answer_plan(make(k=3))
    right = generated(citations=[plan.fact_passage[1]])
    reader_target(make(lm=DummyLM([right]), k=3), plan, BOOK, ReplyFile(tmp_path / "r.jsonl", "model-a"))
    lm = DummyLM([right])
    reader_target(make(lm=lm, k=3), plan, BOOK, ReplyFile(tmp_path / "r.jsonl", "model-b"))
    assert len(lm.history) == 1


def test_a_reply_file_cut_mid_line_keeps_its_whole_lines(make, tmp_path):
    plan = answer_plan(make(k=3))
    path = tmp_path / "r.jsonl"
    reader_target(make(lm=DummyLM([generated(citations=[plan.fact_passage[1]])]), k=3), plan, BOOK,
                  ReplyFile(path, "m"))
    path.write_text(path.read_text() + '{"key": "tiny/q9/1-2-3/own", "sha')  # a run killed mid-write
    replies = ReplyFile(path, "m")
    assert list(replies.replies) == [reply_key(BOOK, "q1", plan.order, hinted=False)]
    assert path.read_text().endswith("}\n")


def test_a_reply_file_with_a_broken_line_is_refused_naming_it(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "a", "sha256": "x", "reply": null}\nnot json\n')
    with pytest.raises(DatasetError, match="line 2"):
        ReplyFile(path, "m")
