"""The production embedder: Cohere embed-english-v3.0, batched, retried, and never showing the API key."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from bookrag.config import Secret
from bookrag.errors import ConfigError, EmbeddingError
from retrievers.cohere_calls import CohereCalls

BATCH_SIZE = 96  # the API's limit of texts per call


class CohereEmbedder:
    name = "cohere1024"
    dim = 1024

    def __init__(
        self,
        api_key: Secret | None,
        model: str = "embed-english-v3.0",
        timeout: float = 30.0,
        httpx_client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not api_key:
            raise ConfigError("the Cohere embedder needs COHERE_API_KEY (environment or .env)")
        self.model_id = model
        self._calls = CohereCalls(api_key, endpoint="embed", work="embedding", model=model,
                                  model_variable="COHERE_MODEL", error=EmbeddingError, timeout=timeout,
                                  httpx_client=httpx_client, sleep=sleep)

    def __repr__(self) -> str:
        return f"CohereEmbedder(model={self.model_id!r})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [
            vector
            for start in range(0, len(texts), BATCH_SIZE)
            for vector in self._embed(texts[start : start + BATCH_SIZE], "search_document")
        ]

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "search_query")[0]

    def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        """One API call (at most 96 texts)."""

        def request() -> list[list[float]]:
            response = self._calls.client.embed(
                texts=texts, model=self.model_id, input_type=input_type, embedding_types=["float"]
            )
            embeddings = getattr(response, "embeddings", None)
            if embeddings is None:
                raise self._calls.malformed("JSON without embeddings")
            return self._checked(embeddings.float_, len(texts))

        return self._calls.call(request)

    def _checked(self, vectors: list[list[float]] | None, count: int) -> list[list[float]]:
        """Vectors that fit the collection, or an error (another COHERE_MODEL may give other sizes)."""
        vectors = vectors or []
        if len(vectors) != count or any(len(vector) != self.dim for vector in vectors):
            sizes = sorted({len(vector) for vector in vectors})
            raise EmbeddingError(
                f"Cohere model {self.model_id!r} returned {len(vectors)} vectors of size {sizes} "
                f"for {count} texts; bookrag needs {self.dim}-dimensional vectors (embed-english-v3.0)"
            )
        return vectors
