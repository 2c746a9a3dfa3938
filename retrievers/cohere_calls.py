"""Calls to one of Cohere's endpoints: tried up to ATTEMPTS times with backoff, each failure told apart (busy,
rejected key, refused request, malformed reply), and the API key kept out of every message."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import cohere
import httpx
from cohere.core.api_error import ApiError

from bookrag.config import Secret
from bookrag.errors import BookragError, ConfigError
from bookrag.redaction import scrub

ATTEMPTS = 3  # in all; waits of 1 s, then 2 s, between them
# With max_retries=0 the SDK raises these httpx errors as they are.
TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
EXCERPT = 240  # characters of a reply an error message quotes at most
T = TypeVar("T")


class CohereCalls:
    """The SDK client and the retry loop around its calls to `endpoint` (`embed`, `rerank`). `work` names the
    endpoint's work in errors ("embedding"), `model_variable` the setting that chose `model`, and `error` is what a
    failure raises (a ConfigError for a rejected key)."""

    def __init__(self, api_key: Secret, *, endpoint: str, work: str, model: str, model_variable: str,
                 error: type[BookragError], timeout: float, httpx_client: httpx.Client | None,
                 sleep: Callable[[float], None]):
        self.endpoint, self.work, self.model, self.model_variable = endpoint, work, model, model_variable
        self.error = error
        self._api_key = api_key  # only to scrub it from the service's messages
        self._sleep = sleep
        # The retry loop below decides what is worth retrying, so the SDK's own retries are off.
        self.client = cohere.ClientV2(
            api_key=api_key.reveal(), timeout=timeout, max_retries=0, httpx_client=httpx_client
        )

    def call(self, request: Callable[[], T]) -> T:
        """`request()` (one API call), tried up to ATTEMPTS times."""
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(2.0 ** (attempt - 1))
            try:
                return request()
            except (ApiError, *TRANSPORT_ERRORS) as exc:
                failure = self._transient_failure(exc)
        raise self.error(
            f"Cohere {self.work} failed {ATTEMPTS} times (last: {failure}); "
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
            raise self.malformed(f"HTTP {status} with a body that is not JSON ({self.excerpt(str(exc.body))!r})") from None
        if status in (401, 403, 498):  # 498: Cohere's "invalid token"
            raise ConfigError(f"Cohere rejected COHERE_API_KEY ({status}): check the key") from None
        if status in (408, 429) or (status or 0) >= 500:
            return f"HTTP {status}"
        detail = exc.body.get("message") if isinstance(exc.body, dict) else None
        raise self.error(
            f"Cohere refused the {self.endpoint} request (HTTP {status}: {self.excerpt(str(detail or 'no message'))}); "
            f"check {self.model_variable} ({self.model!r}) and the texts"
        ) from None

    def malformed(self, what: str) -> BookragError:
        return self.error(
            f"Cohere's reply to the {self.endpoint} request was {self.scrubbed(what)}, not the {self.endpoint} JSON "
            "it documents; something between here and Cohere (a proxy, a gateway, CO_API_URL) answered instead: "
            "try again later"
        )

    def scrubbed(self, text: str) -> str:
        """The service's own words, which may echo the key back."""
        return scrub(text, [self._api_key.reveal()])

    def excerpt(self, text: str) -> str:
        """The start of the service's words for a message: scrubbed, then cut (a cut through the key would leave a
        piece that scrubbing no longer knows)."""
        return self.scrubbed(text)[:EXCERPT]
