"""One door to what the reader reads: `BookRAG.reader_inputs`. A labeled demo shows the model the very inputs
`forward` sends for the same question, whole passages or compact, and a training target the same with its passage
blocks in another order; an `order` renumbers the blocks and their sentences together."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM
from dspy.utils.callback import BaseCallback
from tiny_book import generated, pin_gate

from bookrag.questions import Question
from programs.compile.optimizers import labeled_demos
from programs.compile.reader_targets import plan_target, reader_target
from programs.rag.book_rag import BookRAG
from programs.rag.context import LOCAL_CONTEXT_WORDS

TALL = Question("q1", "How tall is Quillon the teaching robot?", True, ("intro.md",), ("1.4 m",),
                "Quillon is 1.4 m tall.", "factual", style="book-words")
FIELDS = ("context", "question", "history")


class ReaderCalls(BaseCallback):
    """The inputs of every call of a program's reader (its `generate` module), as DSPy hands them to the module."""

    def __init__(self, reader):
        self.reader, self.inputs = reader, []

    def on_module_start(self, call_id, instance, inputs):
        if instance is self.reader:
            self.inputs.append({name: inputs["kwargs"][name] for name in FIELDS})  # Module.__call__(**kwargs)


@pytest.fixture(params=[0, LOCAL_CONTEXT_WORDS], ids=["whole passages", "compact context"])
def program(request, index):
    program = BookRAG(index.retriever, lm=DummyLM([generated()] * 3), top_k=3, context_words=request.param)
    pin_gate(program.gate, 0.99)
    return program


def sent_by_forward(program, question: Question) -> dict:
    calls = ReaderCalls(program.generate)
    with dspy.context(callbacks=[calls]):
        program(question=question.question, history=question.history)
    assert len(calls.inputs) == 1
    return calls.inputs[0]


def best_first(context: str, order) -> str:
    """A context shown in `order`, its blocks put back under their retrieval numbers, best first."""
    blocks = {}
    for block in context.split("\n\n"):
        shown, rest = block[1:].split("] ", 1)
        blocks[order[int(shown) - 1]] = f"[{order[int(shown) - 1]}] {rest}"
    return "\n\n".join(blocks[n] for n in sorted(blocks))


def test_a_training_target_reads_what_forward_sends_its_blocks_in_another_order(program):
    sent = sent_by_forward(program, TALL)
    plans = [plan_target(program, TALL, "tiny", seed) for seed in range(12)]
    plans = [plan for plan in plans if plan.source != "distractors"]  # those read other passages, on purpose
    assert {plan.order for plan in plans} != {(1, 2, 3)}
    for plan in plans:
        target = reader_target(program, plan, "tiny", None)
        assert {**target.inputs, "context": best_first(target.inputs["context"], plan.order)} == sent


def test_a_labeled_demo_reads_what_forward_sends(program):
    (demo,) = labeled_demos(program, [TALL])
    assert {name: demo[name] for name in FIELDS} == sent_by_forward(program, TALL)


def test_another_order_renumbers_the_blocks_and_their_sentences(program):
    query, passages = program.evidence(TALL.question)
    best_first = program.reader_inputs(TALL.question, query, passages)
    reversed_ = program.reader_inputs(TALL.question, query, passages, order=[3, 2, 1])
    moved = {1: 3, 2: 2, 3: 1}
    assert sorted(reversed_.sentences) == sorted((moved[n], text) for n, text in best_first.sentences)
    blocks = reversed_.context.split("\n\n")
    numbers = [int(block[1:block.index("]")]) for block in blocks if block.startswith("[")]
    assert numbers == sorted(numbers)  # shown in their new order, from [1]
    assert {number for number, _ in reversed_.sentences} == set(numbers)


def test_an_order_that_is_no_arrangement_of_the_passages_is_refused(program):
    query, passages = program.evidence(TALL.question)
    with pytest.raises(ValueError, match="no arrangement"):
        program.reader_inputs(TALL.question, query, passages, order=[1, 1, 2])
