"""DSPy's async convention: `await program.acall(...)` runs `BookRAG.aforward`, which awaits the LM through DSPy's
async path where the LM has one, and in a worker thread where it has none (the local llama.cpp engine is sync-only).

A real event loop (`asyncio.run`) and fake LMs: DummyLM, whose async engine is DSPy's own, and a sync-only engine
that locks as the local one does. Each LM call records whether it ran on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import threading

import dspy
import pytest
from dspy.clients.engines.dummy_engine import AsyncDummyEngine, DummyEngine
from dspy.utils import DummyLM
from tiny_book import SOURCES, chat_reply, generated

from bookrag.errors import BadArgumentError
from programs.rag.async_predict import has_async_path

OFF_TOPIC = "What is the capital of France?"  # no passage is near it: the gate refuses, no LM call
REFUSED = "What colour is Quillon the teaching robot?"  # the LM says the passages do not answer it
INVENTED = "How much does Quillon the teaching robot cost?"  # the LM invents a price no passage holds
SELECTION = "The wireless emergency stop cuts motor power within 50 ms."
SELECTED = "How fast does the wireless emergency stop cut motor power?"
ANSWERED = list(SOURCES)[:4]
QUESTIONS = [*ANSWERED, OFF_TOPIC, REFUSED, INVENTED, SELECTED]  # 8, 7 of them asked of the LM
INPUTS = [{"question": q, "selected_text": SELECTION if q == SELECTED else ""} for q in QUESTIONS]
REPLIES = {
    **{q: generated(answer=f"The book says {fact}.", citations=[1]) for q, (_, fact) in SOURCES.items()},
    REFUSED: generated(answer="The passages do not say.", citations=[], answerable=False),
    INVENTED: generated(answer="Quillon costs $12,000.", citations=[1]),
    SELECTED: generated(answer="It cuts motor power within 50 ms.", citations=[1]),
}


class RecordingEngine(DummyEngine):
    """DummyLM's engine, noting for each call whether it ran on a running event loop's thread."""

    def __init__(self, owner):
        super().__init__(owner)
        self.on_loop: list[bool] = []

    def _complete_messages(self, messages):
        try:
            asyncio.get_running_loop()
            self.on_loop.append(True)
        except RuntimeError:
            self.on_loop.append(False)
        return super()._complete_messages(messages)


def dummy_lm() -> tuple[DummyLM, RecordingEngine]:
    """DummyLM with DSPy's async engine over a recording sync one."""
    lm = DummyLM(REPLIES)
    engine = RecordingEngine(lm)
    lm._engine_spec, lm._async_engine_spec = engine, AsyncDummyEngine(engine)
    return lm, engine


class SyncOnlyEngine:
    """A custom engine with no async counterpart that serializes its calls, as the local llama.cpp engine does."""

    def __init__(self):
        self.inner = RecordingEngine(DummyLM(REPLIES))
        self.lock = threading.Lock()

    def complete(self, request):
        with self.lock:
            return self.inner.complete(request)


def sync_only_lm() -> tuple[dspy.LM, RecordingEngine]:
    engine = SyncOnlyEngine()
    return dspy.LM("local/fake-gguf", engine=engine, cache=False, num_retries=0), engine.inner


def outcome(pred) -> tuple:
    return pred.answer, pred.is_refusal, pred.refusal_reason, list(pred.citations), str(pred.mode)


def test_acall_answers_through_dspys_async_path(make):
    """`asyncio.run(program.acall(question=...))` raised AttributeError: BookRAG had no `aforward`."""
    lm, engine = dummy_lm()
    program = make(lm=lm)
    pred = asyncio.run(program.acall(question="How tall is Quillon the teaching robot?"))
    assert pred.answer == "The book says 1.4 m tall." and not pred.is_refusal
    assert pred.passages[0].source == "intro.md"
    assert engine.on_loop == [True]  # awaited on the loop (AsyncDummyEngine), not run in a thread


def test_gather_and_evaluate_give_the_answers_of_eight_forward_calls(make):
    lm, engine = dummy_lm()
    program = make(lm=lm)
    one_by_one = [outcome(program(**inputs)) for inputs in INPUTS]
    assert engine.on_loop == [False] * 7

    async def gathered():
        return await asyncio.gather(*(program.acall(**inputs) for inputs in INPUTS))

    assert [outcome(pred) for pred in asyncio.run(gathered())] == one_by_one
    assert engine.on_loop[7:] == [True] * 7
    devset = [dspy.Example(**inputs).with_inputs("question", "selected_text") for inputs in INPUTS]
    evaluated = dspy.Evaluate(devset=devset, metric=lambda example, pred, trace=None: 1.0, num_threads=4,
                              display_progress=False)(program)
    assert [outcome(pred) for _, pred, _ in evaluated.results] == one_by_one
    # The eight are not all alike: answers, the gate's refusal, the model's own, a check's, a selection.
    assert [reason for _, _, reason, _, _ in one_by_one] == [None] * 4 + ["gate", "model", "unsupported_claim", None]


def test_a_sync_only_engine_is_awaited_in_a_worker_thread(make):
    """DSPy refuses to await a custom engine without an async counterpart (LMUnsupportedFeatureError): the local
    model's calls run in worker threads, one at a time under the engine's lock, and give the same answers."""
    lm, engine = sync_only_lm()
    assert not has_async_path(lm) and has_async_path(DummyLM([])) and has_async_path(dspy.LM("openai/gpt-4o-mini"))
    program = make(lm=lm)
    one_by_one = [outcome(program(**inputs)) for inputs in INPUTS]

    async def gathered():
        return await asyncio.gather(*(program.acall(**inputs) for inputs in INPUTS))

    assert [outcome(pred) for pred in asyncio.run(gathered())] == one_by_one
    assert engine.on_loop == [False] * 14  # never on the loop's thread: the loop was never blocked by the model


def test_a_gate_refusal_awaits_no_lm(make):
    lm, engine = dummy_lm()
    pred = asyncio.run(make(lm=lm, probability=0.1).acall(question="How tall is Quillon the teaching robot?"))
    assert pred.is_refusal and pred.refusal_reason == "gate" and engine.on_loop == []


def test_ask_async_awaits_acall_and_matches_ask(make):
    """ask_async ran `ask` in a thread; it awaits the program's `acall` now, with `ask`'s Response."""
    lm, engine = dummy_lm()
    program = make(lm=lm)

    async def asked():
        return await asyncio.gather(*(program.ask_async(q) for q in SOURCES))

    responses = asyncio.run(asked())
    assert engine.on_loop == [True] * len(SOURCES)
    assert [r.to_dict() | {"total_time_ms": 0, "generation_time_ms": 0, "retrieval_time_ms": 0}
            for r in responses] == [program.ask(q).to_dict() | {"total_time_ms": 0, "generation_time_ms": 0,
                                                                "retrieval_time_ms": 0} for q in SOURCES]


def test_ask_async_checks_its_arguments_as_ask_does(make):
    program = make(answer_mode="extractive")
    with pytest.raises(ValueError, match="Query cannot be empty"):
        asyncio.run(program.ask_async("  "))
    with pytest.raises(ValueError, match="top_k must be between 1 and 50"):
        asyncio.run(program.ask_async("How tall is Quillon the teaching robot?", top_k=0))


def test_ask_and_ask_async_refuse_a_module_the_book_lacks_naming_its_modules(make):
    """`rag.ask(..., module="nope")` refused quietly, as if the book did not cover the question; ask.py exits 4."""
    lm, engine = dummy_lm()
    program = make(lm=lm)
    question = "How tall is Quillon the teaching robot?"
    named = r"module 'nope' is not a module of the book; its modules: general, ros2, sim \(named as in citations\)"
    with pytest.raises(BadArgumentError, match=named) as raised:
        program.ask(question, module="nope")
    assert raised.value.exit_code == 4
    with pytest.raises(BadArgumentError, match=named):
        asyncio.run(program.ask_async(question, module="nope"))
    assert engine.on_loop == []  # nothing was asked of the LM
    assert program.ask(question, module="general").answer == asyncio.run(
        program.ask_async(question, module="general")).answer == "The book says 1.4 m tall."


def test_ask_async_streams_the_answer_as_it_is_written(make, hosted_lm):
    lm, server = hosted_lm(chat_reply("Quillon is 1.4 m tall."))
    pieces = []
    response = asyncio.run(make(lm=lm).ask_async("How tall is Quillon the teaching robot?",
                                                 on_answer_text=pieces.append))
    assert server.streamed == 1 and len(pieces) > 3
    assert "".join(pieces).strip() == response.answer == "Quillon is 1.4 m tall." and not response.is_refusal
