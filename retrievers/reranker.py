"""What a reranker offers, and the factory that picks one from the settings."""

from __future__ import annotations

from typing import Protocol

from bookrag.config import Settings


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


def make_reranker(settings: Settings, cached: bool = True) -> Reranker | None:
    """The configured reranker (None: `BOOKRAG_RERANKER=none`, or `auto` without a Cohere key), wrapped in the
    on-disk cache unless `cached=False`."""
    if settings.reranker_kind == "none":
        return None
    from retrievers.cohere_reranker import CohereReranker

    reranker = CohereReranker(api_key=settings.cohere_api_key, model=settings.cohere_rerank_model,
                              timeout=settings.cohere_timeout)
    if not cached:
        return reranker
    from retrievers.rerank_cache import CachedReranker

    return CachedReranker(reranker, settings.embedding_cache_path)


def reranker_record(reranker: Reranker | None) -> dict | None:
    """The reranker as a compiled program's manifest records it: its kind and model, never a key; None without one."""
    return None if reranker is None else {"kind": reranker.kind, "model": reranker.model_id}
