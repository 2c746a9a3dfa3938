"""The Prediction of a refusal: the refusal message in the answer's place, with why, what was retrieved and, for a
question about the book, its nearest sections."""

from __future__ import annotations

import dspy

from programs.rag.response import ResponseMode


def refusal_prediction(message, reason, query, passages, gate, timing, nearest=()) -> dspy.Prediction:
    timing = {"retrieval_time_ms": 0.0, "generation_time_ms": 0.0, **timing}
    return dspy.Prediction(answer=message, citations=[], cited_texts=[], passages=passages, is_refusal=True, refusal_reason=reason,
                           confidence="none", mode=ResponseMode.REFUSED, query=query, gate=gate, nearest=list(nearest),
                           **timing)
