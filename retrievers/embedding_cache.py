"""Embeddings cached on disk by (model, input kind, text hash): re-ingests and repeated queries skip the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from retrievers.cache_file import CacheFile, digest
from retrievers.embedder import Embedder


class CachedEmbedder(CacheFile):
    table, column, column_type = "vectors", "vector", "BLOB"

    def __init__(self, inner: Embedder, path: Path):
        self.inner = inner
        self.name, self.model_id, self.dim = inner.name, inner.model_id, inner.dim
        super().__init__(path)

    def _key(self, kind: str, text: str) -> str:
        return f"{self.model_id}|{kind}|{digest(text)}"

    def _encode(self, vector: list[float]) -> bytes:
        return np.asarray(vector, dtype=np.float32).tobytes()

    def _decode(self, blob: bytes) -> list[float]:
        return np.frombuffer(blob, dtype=np.float32).tolist()

    def _usable(self, blob: bytes) -> bool:
        """Not a vector holding NaN or an infinity, as bookrag cached Cohere's replies before it checked them."""
        return bool(np.isfinite(np.frombuffer(blob, dtype=np.float32)).all())

    def _embed(self, kind: str, texts: list[str], compute) -> list[list[float]]:
        return self._values([self._key(kind, t) for t in texts], texts, compute)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed("document", texts, self.inner.embed_documents)

    def embed_query(self, text: str) -> list[float]:
        return self._embed("query", [text], lambda ts: [self.inner.embed_query(ts[0])])[0]
