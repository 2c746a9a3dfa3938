"""`GateDecision`: the refusal gate's decision on a question, with the evidence it judged (`BookRAG.judge`)."""

from __future__ import annotations

from dataclasses import dataclass

from retrievers.passage import Passage


@dataclass(frozen=True)
class GateDecision:
    query: str  # the standalone query that was searched
    passages: list[Passage]
    answerable: bool
    probability: float
    about_the_book: bool  # answerable or not (`RefusalGate.about_the_book`): a refusal names the nearest sections
    gate: dict  # the decision as a Prediction reports it: probability, threshold, answerable, calibrated
    retrieval_time_ms: float
    retrieved_at: float  # time.perf_counter() when the passages were in: the answer's time counts from here
