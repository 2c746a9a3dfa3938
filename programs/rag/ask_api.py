"""`AskAPI`: `ask` and `ask_async`, the seed-001 API over a program's `forward`: a question in, a checked `Response`
out. `BookRAG` has them through this class."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import dspy

from bookrag.config import setting_problem
from programs.rag.answer_stream import stream_answer
from programs.rag.bounded_question import bounded_question
from programs.rag.response import Response


class AskAPI:
    """`ask` and `ask_async` for a DSPy module whose `forward(question, history, selected_text, module, k)` returns the
    checked Prediction and whose `generate.predict` writes the answer (`BookRAG`)."""

    def ask(self, query: str, *, top_k: int | None = None, module: str | None = None, history=None,
            selected_text: str | None = None, on_answer_text: Callable[[str], None] | None = None) -> Response:
        """The answer to `query`, checked. `on_answer_text` receives the LM's answer piece by piece as it is
        written: a draft, which the returned Response replaces (the checks may refuse it)."""
        if not query or not query.strip():
            raise ValueError("Query cannot be empty")
        if top_k is not None and (problem := setting_problem("top_k", top_k)):
            raise ValueError(f"top_k {problem}")
        query = bounded_question(query)  # as `forward` reads it: the Response and a chat's history hold this
        started = time.perf_counter()
        inputs = {"question": query, "history": tuple(history or ()), "selected_text": selected_text or "",
                  "module": module, "k": top_k}
        with dspy.context(track_usage=True):
            if on_answer_text is None:
                pred = self(**inputs)
            else:
                pred = stream_answer(self, self.generate.predict, on_answer_text, **inputs)
        return Response.from_prediction(pred, query, history=history, started=started)

    async def ask_async(self, query: str, **kwargs) -> Response:
        return await asyncio.to_thread(self.ask, query, **kwargs)
