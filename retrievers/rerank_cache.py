"""Rerank scores cached on disk by (model, query hash, passage hash), beside the embeddings: a question asked again
costs no rerank call."""

from __future__ import annotations

from pathlib import Path

from retrievers.cache_file import CacheFile, digest
from retrievers.reranker import Reranker, is_relevance


class CachedReranker(CacheFile):
    table, column, column_type = "rerank_scores", "score", "REAL"

    def __init__(self, inner: Reranker, path: Path):
        self.inner = inner
        self.kind, self.model_id = inner.kind, inner.model_id
        super().__init__(path)

    def scores(self, query: str, texts: list[str]) -> list[float]:
        keys = [f"{self.model_id}|{digest(query)}|{digest(text)}" for text in texts]
        return self._values(keys, texts, lambda missing: self.inner.scores(query, missing))

    def _usable(self, score: float) -> bool:
        """Not a score out of 0..1, as bookrag cached Cohere's replies before it checked them."""
        return is_relevance(score)
