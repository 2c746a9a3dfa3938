"""BM25-style sparse vectors from Qdrant's own encoder; the collection's IDF modifier supplies the IDF part."""

from __future__ import annotations

import qdrant_edge as qe

from retrievers.store import Sparse

# Chunks average ~140 tokens of which ~60% survive stop-word removal; the encoder's length norm wants that.
_AVG_DOC_LEN = 90.0


class Bm25Encoder:
    def __init__(self):
        self._model = qe.Bm25(qe.Bm25Config(avg_len=_AVG_DOC_LEN, language="english"))

    def document(self, text: str) -> Sparse:
        vector = self._model.embed_document(text)
        return Sparse(list(vector.indices), list(vector.values))

    def query(self, text: str) -> Sparse:
        vector = self._model.embed_query(text)
        return Sparse(list(vector.indices), list(vector.values))
