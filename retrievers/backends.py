"""The configured back ends of a book's index: its vector store, its embedder and its reranker, each picked from the
settings. The protocols they meet live apart (store.py, embedder.py, reranker.py), so no implementation imports
the module that chooses it."""

from __future__ import annotations

from bookrag.config import Settings
from retrievers.embedder import Embedder
from retrievers.reranker import Reranker
from retrievers.store import VectorStore


def open_store(settings: Settings, collection: str) -> VectorStore:
    """The configured back end: a Qdrant server when QDRANT_URL/QDRANT_HOST is set, else the embedded engine."""
    if settings.store_kind == "server":
        from retrievers.server_store import ServerStore

        return ServerStore.connect(settings, collection)
    from retrievers.edge_store import EdgeStore

    return EdgeStore(settings.store_dir, collection)


def make_embedder(settings: Settings, cached: bool = True) -> Embedder:
    """The configured embedder, wrapped in the on-disk cache unless `cached=False`."""
    if settings.embedder_kind == "cohere":
        from retrievers.cohere_embedder import CohereEmbedder

        embedder: Embedder = CohereEmbedder(
            api_key=settings.cohere_api_key, model=settings.cohere_model, timeout=settings.cohere_timeout
        )
    else:
        from retrievers.minilm_embedder import MiniLMEmbedder

        embedder = MiniLMEmbedder(threads=settings.embed_threads)
    if not cached:
        return embedder
    from retrievers.embedding_cache import CachedEmbedder

    return CachedEmbedder(embedder, settings.embedding_cache_path)


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
