"""Selected-text mode: a question about text the reader selected is answered from the selection alone, with no
retrieval; anything else is refused with `SELECTION_REFUSAL_MESSAGE`."""

from __future__ import annotations

import time

import dspy

from bookrag.config import SELECTION_REFUSAL_MESSAGE
from programs.rag.answer_with_citations import written_badly
from programs.rag.cited_text import cited_texts
from programs.rag.reader_inputs import reader_inputs
from programs.rag.refusal_prediction import refusal_prediction
from programs.rag.response import ResponseMode
from programs.refusal.claim_check import grounded_citations
from programs.refusal.reasons import RefusalReason
from retrievers.passage import Passage

MIN_SELECTION_COVERAGE = 0.5  # share of the question's content words the selection must contain


def answer_from_selection(program, question: str, selected_text: str, history: str) -> dspy.Prediction:
    """Selected-text mode: the selection is the only source; no retrieval. `program`: the `BookRAG` whose predictors
    answer; `history`: the earlier turns as its LM reads them (`format_history`)."""
    started, selection = time.perf_counter(), selection_passage(selected_text)
    reply = program.read(reader_inputs(question, [selection], history)) if program.generates else None
    return selection_answer(program, question, selection, reply, started)


async def aanswer_from_selection(program, question: str, selected_text: str, history: str) -> dspy.Prediction:
    """`answer_from_selection` on an event loop: the LM awaited (`apredict`)."""
    started, selection = time.perf_counter(), selection_passage(selected_text)
    reply = await program.aread(reader_inputs(question, [selection], history)) if program.generates else None
    return selection_answer(program, question, selection, reply, started)


def selection_passage(selected_text: str) -> Passage:
    return Passage(id="selection", score=1.0, text=selected_text, title="Selected text", heading="", module="",
                   source="", url="")


def selection_answer(program, question: str, selection: Passage, reply: dspy.Prediction | None,
                     started: float) -> dspy.Prediction:
    """The answer from the LM's `reply` (the extractive mode's without an LM), or the refusal of what the selection
    does not hold, or of a reply that is no answer. `started`: `time.perf_counter()` when the question came in."""
    timing = {"retrieval_time_ms": 0.0, "generation_time_ms": (time.perf_counter() - started) * 1000}
    if program.generates and (reply is None or written_badly(reply.answer)):
        return refusal_prediction(SELECTION_REFUSAL_MESSAGE, RefusalReason.UNREADABLE_REPLY, question, [], {}, timing)
    if reply is not None:
        answer, verdict, mode = reply.answer, bool(reply.answerable), ResponseMode.GENERATED
    else:
        extract = program.extract(question, [selection])
        answer, verdict, mode = extract.answer, extract.coverage >= MIN_SELECTION_COVERAGE, ResponseMode.EXTRACTIVE
    if not verdict or not answer:
        return refusal_prediction(SELECTION_REFUSAL_MESSAGE, RefusalReason.NOT_IN_SELECTION, question, [], {}, timing)
    # A number, version or name the selection does not hold came from memory. Only this check: on the train and
    # dev selections, the subject and content checks also refused two right answers (benchmarks/selection_checks.py;
    # docs/results.md, 2026-11-25).
    if mode == ResponseMode.GENERATED and grounded_citations(answer, [selection.text_with_heading], [1], question) is None:
        return refusal_prediction(SELECTION_REFUSAL_MESSAGE, RefusalReason.UNSUPPORTED_CLAIM, question, [], {}, timing)
    # The answer cites the selection, its one passage, with the words of it that support the answer.
    return dspy.Prediction(answer=answer, citations=[1], passages=[selection],
                           cited_texts=cited_texts(answer, question, [selection], [1]), is_refusal=False,
                           refusal_reason=None, confidence="low", mode=mode, query=question, gate={}, **timing)
