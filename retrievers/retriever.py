"""`Retriever`: what BookRAG, the reports and the question writer search a book with; `QdrantRetriever`, the one
there is: dense, sparse (BM25) or hybrid (RRF-fused inside Qdrant) search over one book's collection, reranked when a
reranker is configured."""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Protocol

from bookrag.config import DEFAULT_SEARCH_MODE, DEFAULT_TOP_K, SEARCH_MODES, SearchMode
from bookrag.errors import BadArgumentError, RetrievalError, StoreError
from retrievers.bm25 import Bm25Encoder
from retrievers.embedder import Embedder
from retrievers.passage import Passage, rank_key
from retrievers.reranker import Reranker
from retrievers.store import Hit, StoreQuery, VectorStore

log = logging.getLogger(__name__)
RERANK_CANDIDATES = 20  # a search's best passages the reranker orders (one call of 20 documents), to keep its top k


class Retriever(Protocol):
    embedder: Embedder  # the compact context ranks the passages' sentences by its vectors
    reranker: Reranker | None

    def search(self, query: str, k: int = DEFAULT_TOP_K, module: str | None = None, min_score: float | None = None,
               mode: SearchMode = DEFAULT_SEARCH_MODE, mmr: bool = False) -> list[Passage]:
        """The top k passages for `query`, best first (`QdrantRetriever.search`)."""
        ...

    def check_module(self, module: str, named: str = "module", book: str = "the book") -> None:
        """A BadArgumentError naming the book's modules when `module` is none of them."""
        ...


class QdrantRetriever:
    def __init__(self, store: VectorStore, embedder: Embedder, candidates: int = 40, reranker: Reranker | None = None):
        self.store, self.embedder, self.reranker = store, embedder, reranker
        self.candidates = candidates
        self.sparse = Bm25Encoder()
        self._lock = threading.Lock()  # one query at a time into the embedded engine

    def __deepcopy__(self, memo):
        """Shared, not copied: DSPy optimizers deep-copy programs, and a store connection is not program state."""
        return self

    def search(
        self,
        query: str,
        k: int = DEFAULT_TOP_K,
        module: str | None = None,
        min_score: float | None = None,
        mode: SearchMode = DEFAULT_SEARCH_MODE,
        mmr: bool = False,
    ) -> list[Passage]:
        """Top-k passages: the search's, or with a reranker, its top `RERANK_CANDIDATES` reranked to k (with MMR, the
        k diverse passages reordered). `min_score` is a cut on cosine similarity (on the BM25 score in sparse mode)."""
        if not query or not query.strip():
            raise ValueError("Query cannot be empty")
        if mode not in SEARCH_MODES:
            raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        dense = self.embedder.embed_query(query) if (mode != "sparse" or mmr) else None
        sparse = self.sparse.query(query) if mode != "dense" else None
        pool = max(self.candidates, k)
        # Without MMR, ask for the whole pool and cut at k here (`rank_key`): tied scores then get a stable order
        # instead of whatever order the engine returns ties in.
        first = k if mmr else pool
        queries = [StoreQuery(mode=mode, limit=first, dense=dense, sparse=sparse, module=module, mmr=mmr,
                              candidates=pool)]
        # Hybrid scores are ranks; the raw cosine and BM25 scores come from the two branches, in the same batch.
        if mode == "hybrid" or mmr:
            if dense is not None:
                queries.append(StoreQuery(mode="dense", limit=pool, dense=dense, module=module))
            if sparse is not None:
                queries.append(StoreQuery(mode="sparse", limit=pool, sparse=sparse, module=module))
        try:
            with self._lock:
                results = self.store.query_batch(queries)
        except StoreError as exc:
            raise RetrievalError(str(exc)) from None
        ranked = results[0]
        dense_scores = _scores(results[1]) if dense is not None and len(results) > 1 else {}
        sparse_scores = _scores(results[-1]) if sparse is not None and len(results) > 1 else {}
        if mode == "dense" and not mmr:
            dense_scores = _scores(ranked)
        if mode == "sparse" and not mmr:
            sparse_scores = _scores(ranked)
        passages = [_passage(hit, dense_scores.get(hit.id), sparse_scores.get(hit.id)) for hit in ranked]
        if not mmr:
            passages = sorted(passages, key=rank_key)[:k if self.reranker is None else max(k, RERANK_CANDIDATES)]
        if self.reranker is not None:
            passages = self.reranked(query, passages, k)
        if min_score is not None:
            cut = (lambda p: p.sparse_score) if mode == "sparse" else (lambda p: p.dense_score)
            passages = [p for p in passages if (cut(p) or 0.0) >= min_score]
        log.debug(
            "search %r mode=%s k=%d module=%s -> %s",
            query, mode, k, module, [(p.id, round(p.score, 4)) for p in passages],
        )
        return passages

    def check_module(self, module: str, named: str = "module", book: str = "the book") -> None:
        """A module the book does not have is a bad argument naming the modules it has: searched, it would only find
        nothing and refuse. `named`: how the caller's user wrote it (`--module`)."""
        with self._lock:
            modules = sorted({hit.payload.get("module", "") for hit in self.store.scan()} - {""})
        if module not in modules:
            raise BadArgumentError(f"{named} {module!r} is not a module of {book}; its modules: "
                                   f"{', '.join(modules) or 'none'} (named as in citations)")

    def reranked(self, query: str, passages: list[Passage], k: int) -> list[Passage]:
        """The reranker's top k of `passages`, its relevance the ranking `score` of each (and its `rerank_score`)."""
        relevance = self.reranker.scores(query, [p.text_with_heading for p in passages])
        scored = [dataclasses.replace(p, score=s, rerank_score=s) for p, s in zip(passages, relevance, strict=True)]
        return sorted(scored, key=rank_key)[:k]


def _scores(hits: list[Hit]) -> dict[str, float]:
    return {h.id: h.score for h in hits}


def _passage(hit: Hit, dense: float | None, sparse: float | None) -> Passage:
    p = hit.payload
    return Passage(
        id=hit.id,
        score=hit.score,
        text=p.get("text", ""),
        title=p.get("title", ""),
        heading=p.get("heading", ""),
        module=p.get("module", ""),
        source=p.get("source", ""),
        url=p.get("url", ""),
        position=int(p.get("position", 0)),
        dense_score=dense,
        sparse_score=sparse,
    )
