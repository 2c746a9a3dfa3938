"""What a reranker offers (retrievers/backends.py picks one from the settings)."""

from __future__ import annotations

from typing import Protocol


class Reranker(Protocol):
    kind: str  # BOOKRAG_RERANKER's name for it: "cohere"
    model_id: str  # the model's full name

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """Each text's relevance to the query, in the texts' order: one number per pair, whatever else is scored."""
        ...


def is_relevance(score) -> bool:
    """Whether `score` is what a reranker gives: a relevance from 0 to 1 (JSON's `true` is none; NaN compares
    false)."""
    return type(score) in (int, float) and 0 <= score <= 1


def reranker_record(reranker: Reranker | None) -> dict | None:
    """The reranker as a compiled program's manifest records it: its kind and model, never a key; None without one."""
    return None if reranker is None else {"kind": reranker.kind, "model": reranker.model_id}
