"""`AskAPI`: `ask` and `ask_async`, the seed-001 API over a program's `forward` and `aforward`: a question in, a
checked `Response` out. `BookRAG` has them through this class."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import dspy

from bookrag.config import setting_problem
from programs.rag.answer_stream import astream_answer, stream_answer
from programs.rag.bounded_question import bounded_question
from programs.rag.response import Response


class AskAPI:
    """`ask` and `ask_async` for a DSPy module whose `forward(question, history, selected_text, module, top_k)` (and
    `aforward`) return the checked Prediction and whose `generate.predict` writes the answer (`BookRAG`)."""

    def ask(self, query: str, *, top_k: int | None = None, module: str | None = None, history=None,
            selected_text: str | None = None, on_answer_text: Callable[[str], None] | None = None) -> Response:
        """The answer to `query`, checked. `on_answer_text` receives the LM's answer piece by piece as it is
        written: a draft, which the returned Response replaces (the checks may refuse it)."""
        inputs = program_inputs(query, top_k, module, history, selected_text)
        self.check_module(module)
        started = time.perf_counter()
        with dspy.context(track_usage=True):
            if on_answer_text is None:
                pred = self(**inputs)
            else:
                pred = stream_answer(self, self.generate.predict, on_answer_text, **inputs)
        return Response.from_prediction(pred, inputs["question"], history=history, started=started)

    async def ask_async(self, query: str, *, top_k: int | None = None, module: str | None = None, history=None,
                        selected_text: str | None = None,
                        on_answer_text: Callable[[str], None] | None = None) -> Response:
        """`ask` on an event loop: the program's `acall`, so the LM is awaited through DSPy's async path."""
        inputs = program_inputs(query, top_k, module, history, selected_text)
        if module is not None:
            await asyncio.to_thread(self.check_module, module)  # a scan of the store: not on the loop
        started = time.perf_counter()
        with dspy.context(track_usage=True):
            if on_answer_text is None:
                pred = await self.acall(**inputs)
            else:
                pred = await astream_answer(self, self.generate.predict, on_answer_text, **inputs)
        return Response.from_prediction(pred, inputs["question"], history=history, started=started)

    def check_module(self, module: str | None) -> None:
        """`module` must be one of the book's (BadArgumentError naming them, as ask.py's --module): searched, an
        unknown one would find nothing, and the question would be refused as if the book did not cover it."""
        if module is not None and self.retriever is not None:
            self.retriever.check_module(module)


def program_inputs(query: str, top_k: int | None, module: str | None, history, selected_text: str | None) -> dict:
    """`forward`'s inputs from `ask`'s arguments, checked; the question bounded as `forward` reads it, so the Response
    and a chat's history hold what was answered."""
    if not query or not query.strip():
        raise ValueError("Query cannot be empty")
    if top_k is not None and (problem := setting_problem("top_k", top_k)):
        raise ValueError(f"top_k {problem}")
    return {"question": bounded_question(query), "history": tuple(history or ()), "selected_text": selected_text or "",
            "module": module, "top_k": top_k}
