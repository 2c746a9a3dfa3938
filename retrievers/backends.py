"""The back ends of a book's index, each kind in a table from the name its setting gives (`Settings.store_kind`,
`embedder_kind`, `reranker_kind`) to what builds it. Adding a back end is its class and one entry here (and its name
among the setting's values). The protocols they meet live apart (store.py, embedder.py, reranker.py), so no
implementation imports the module that chooses it.

Each builder imports its class when called: qdrant-client alone takes a second to import, and a run uses one back
end of each kind.
"""

from __future__ import annotations

from collections.abc import Callable

from bookrag.config import Settings
from retrievers.embedder import Embedder
from retrievers.reranker import Reranker
from retrievers.store import VectorStore


def _edge_store(settings: Settings, collection: str) -> VectorStore:
    from retrievers.edge_store import EdgeStore

    return EdgeStore(settings.store_dir, collection)


def _server_store(settings: Settings, collection: str) -> VectorStore:
    from retrievers.server_store import ServerStore

    return ServerStore.connect(settings, collection)


def _minilm_embedder(settings: Settings) -> Embedder:
    from retrievers.minilm_embedder import MiniLMEmbedder

    return MiniLMEmbedder(threads=settings.embed_threads)


def _cohere_embedder(settings: Settings) -> Embedder:
    from retrievers.cohere_embedder import CohereEmbedder

    return CohereEmbedder(api_key=settings.cohere_api_key, model=settings.cohere_model,
                          timeout=settings.cohere_timeout)


def _cohere_reranker(settings: Settings) -> Reranker:
    from retrievers.cohere_reranker import CohereReranker

    return CohereReranker(api_key=settings.cohere_api_key, model=settings.cohere_rerank_model,
                          timeout=settings.cohere_timeout)


# The embedded engine, or a Qdrant server when QDRANT_URL/QDRANT_HOST is set.
STORES: dict[str, Callable[[Settings, str], VectorStore]] = {"embedded": _edge_store, "server": _server_store}
EMBEDDERS: dict[str, Callable[[Settings], Embedder]] = {"local": _minilm_embedder, "cohere": _cohere_embedder}
RERANKERS: dict[str, Callable[[Settings], Reranker]] = {"cohere": _cohere_reranker}  # and "none": no reranker


def open_store(settings: Settings, collection: str) -> VectorStore:
    """The configured store's `collection`."""
    return STORES[settings.store_kind](settings, collection)


def make_embedder(settings: Settings, cached: bool = True) -> Embedder:
    """The configured embedder, wrapped in the on-disk cache unless `cached=False`."""
    embedder = EMBEDDERS[settings.embedder_kind](settings)
    if not cached:
        return embedder
    from retrievers.embedding_cache import CachedEmbedder

    return CachedEmbedder(embedder, settings.embedding_cache_path)


def make_reranker(settings: Settings, cached: bool = True) -> Reranker | None:
    """The configured reranker (None: `BOOKRAG_RERANKER=none`, or `auto` without a Cohere key), wrapped in the
    on-disk cache unless `cached=False`."""
    if settings.reranker_kind == "none":
        return None
    reranker = RERANKERS[settings.reranker_kind](settings)
    if not cached:
        return reranker
    from retrievers.rerank_cache import CachedReranker

    return CachedReranker(reranker, settings.embedding_cache_path)
