"""The production embedder: Cohere embed-english-v3.0, batched, retried, and never showing the API key."""

from __future__ import annotations

import time
from collections.abc import Callable

import cohere
import httpx
from cohere.core.api_error import ApiError

from bookrag.config import Secret
from bookrag.errors import ConfigError, EmbeddingError
from bookrag.redaction import scrub

BATCH_SIZE = 96  # the API's limit of texts per call
ATTEMPTS = 3  # in all; waits of 1 s, then 2 s, between them
# With max_retries=0 the SDK raises these httpx errors as they are.
TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


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
        self._api_key = api_key  # only to scrub it from the service's messages
        self._sleep = sleep
        # The retry loop below decides what is worth retrying, so the SDK's own retries are off.
        self._client = cohere.ClientV2(
            api_key=api_key.reveal(), timeout=timeout, max_retries=0, httpx_client=httpx_client
        )

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
        """One API call (at most 96 texts), tried up to ATTEMPTS times."""
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(2.0 ** (attempt - 1))
            try:
                response = self._client.embed(
                    texts=texts, model=self.model_id, input_type=input_type, embedding_types=["float"]
                )
                embeddings = getattr(response, "embeddings", None)
                if embeddings is None:
                    raise self._malformed("JSON without embeddings")
                return self._checked(embeddings.float_, len(texts))
            except (ApiError, *TRANSPORT_ERRORS) as exc:
                failure = self._transient_failure(exc)
        raise EmbeddingError(
            f"Cohere embedding failed {ATTEMPTS} times (last: {failure}); "
            "the service is busy or unreachable: check the network and your rate limit, then try again"
        )

    def _transient_failure(self, exc: Exception) -> str:
        """Describe a failure worth retrying; raise at once for one that would only fail again.

        `from None`: httpx errors carry the request (whose headers hold the key), and an ApiError
        prints the response headers; neither belongs in a user's traceback.
        """
        if isinstance(exc, httpx.TimeoutException):
            return "timed out"
        if not isinstance(exc, ApiError):
            return f"connection failed: {type(exc).__name__}"
        status = exc.status_code
        if status is not None and 200 <= status < 300:  # a success status whose body the SDK could not parse
            raise self._malformed(f"HTTP {status} with a body that is not JSON ({str(exc.body)[:120]!r})") from None
        if status in (401, 403, 498):  # 498: Cohere's "invalid token"
            raise ConfigError(f"Cohere rejected COHERE_API_KEY ({status}): check the key") from None
        if status in (408, 429) or (status or 0) >= 500:
            return f"HTTP {status}"
        detail = exc.body.get("message") if isinstance(exc.body, dict) else None
        raise EmbeddingError(
            f"Cohere refused the embed request (HTTP {status}: {self._scrubbed(detail or 'no message')}); "
            f"check COHERE_MODEL ({self.model_id!r}) and the texts"
        ) from None

    def _malformed(self, what: str) -> EmbeddingError:
        return EmbeddingError(
            f"Cohere's reply to the embed request was {self._scrubbed(what)}, not the embed JSON it documents; "
            "something between here and Cohere (a proxy, a gateway, CO_API_URL) answered instead: try again later"
        )

    def _scrubbed(self, text: str) -> str:
        """The service's own words, which may echo the key back."""
        return scrub(text, [self._api_key.reveal()])

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
