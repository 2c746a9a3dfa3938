"""The production embedder: Cohere embed-english-v3.0, batched, retried, and never showing the API key."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import numpy as np

from bookrag.config import Secret
from bookrag.errors import ConfigError, EmbeddingError
from retrievers.cohere_calls import CohereCalls

BATCH_SIZE = 96  # the API's limit of texts per call
FLOAT32_MAX = float(np.finfo(np.float32).max)  # the index and the cache keep 32-bit numbers


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
            return self._checked(getattr(response, "embeddings", None), len(texts))

        return self._calls.call(request)

    def _checked(self, embeddings, count: int) -> list[list[float]]:
        """The reply's vectors, once the whole reply is checked: vectors that do not fit the collection (another
        COHERE_MODEL may give other sizes) or hold what is no finite number (a NaN drops its chunk out of every
        search by meaning) reach neither the index nor the cache."""
        if embeddings is None:
            raise self._calls.malformed("JSON without embeddings")
        vectors = embeddings.float_ or []
        if (missing := next((i for i, vector in enumerate(vectors) if not isinstance(vector, list)), None)) is not None:
            raise self._calls.malformed(f"JSON whose vector {missing} is {json.dumps(vectors[missing], default=str)}, "
                                        "not a list of numbers")
        if len(vectors) != count or any(len(vector) != self.dim for vector in vectors):
            sizes = sorted({len(vector) for vector in vectors})
            raise EmbeddingError(
                f"Cohere model {self.model_id!r} returned {len(vectors)} vectors of size {sizes} "
                f"for {count} texts; bookrag needs {self.dim}-dimensional vectors (embed-english-v3.0)"
            )
        bad = next(((i, position, value) for i, vector in enumerate(vectors) for position, value in enumerate(vector)
                    if not _finite_32_bit(value)), None)
        if bad:
            i, position, value = bad
            raise self._calls.malformed(f"JSON whose vector {i} holds {json.dumps(value, default=str)} at position "
                                        f"{position} (not a finite 32-bit number)")
        return vectors


def _finite_32_bit(value) -> bool:
    """A finite number within a 32-bit float's range (JSON's `true` is no number; NaN compares false)."""
    return type(value) in (int, float) and abs(value) <= FLOAT32_MAX
