"""What every embedder offers, and the factory that picks one from the settings."""

from __future__ import annotations

from typing import Protocol

from bookrag.config import Settings


class Embedder(Protocol):
    name: str  # short tag that goes into the collection name, e.g. "minilm384"
    model_id: str  # the model's full name, recorded in manifests
    dim: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


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
