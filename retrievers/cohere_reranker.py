"""The production reranker: Cohere rerank-v3.5, a cross-encoder that reads the question with each passage; batched,
retried, and never showing the API key."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx

from bookrag.config import Secret
from bookrag.errors import ConfigError, RetrievalError
from retrievers.cohere_calls import CohereCalls
from retrievers.reranker import is_relevance

BATCH_SIZE = 1000  # Cohere's advice: no more documents than this in one request


class CohereReranker:
    kind = "cohere"

    def __init__(
        self,
        api_key: Secret | None,
        model: str = "rerank-v3.5",
        timeout: float = 30.0,
        httpx_client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not api_key:
            raise ConfigError("the Cohere reranker needs COHERE_API_KEY (environment or .env)")
        self.model_id = model
        self._calls = CohereCalls(api_key, endpoint="rerank", work="reranking", model=model,
                                  model_variable="COHERE_RERANK_MODEL", error=RetrievalError, timeout=timeout,
                                  httpx_client=httpx_client, sleep=sleep)

    def __repr__(self) -> str:
        return f"CohereReranker(model={self.model_id!r})"

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """Each text's relevance to `query`, 0 to 1, in the texts' order. A pair's score does not depend on the other
        texts, so batches are scored apart and the scores can be cached pair by pair."""
        return [
            score
            for start in range(0, len(texts), BATCH_SIZE)
            for score in self._rerank(query, texts[start : start + BATCH_SIZE])
        ]

    def _rerank(self, query: str, texts: list[str]) -> list[float]:
        """One API call (at most BATCH_SIZE texts), asking for every text's score (no `top_n`)."""

        def request() -> list[float]:
            response = self._calls.client.rerank(model=self.model_id, query=query, documents=texts)
            return self._in_order(getattr(response, "results", None) or [], len(texts))

        return self._calls.call(request)

    def _in_order(self, results, count: int) -> list[float]:
        """The results' scores in the texts' order (Cohere lists them best first, each with its text's index), once
        the whole reply is checked: a score out of 0..1 would rank the passages (a negative one upside down), weigh in
        the refusal gate, and stay in the cache after the fault is gone."""
        problem = self._problem(results, count)
        if problem:
            raise self._calls.malformed(f"JSON whose {problem}")
        return [score for _, score in sorted((result.index, result.relevance_score) for result in results)]

    def _problem(self, results, count: int) -> str | None:
        """What is wrong with the results for `count` texts, if anything: each text's index once, with a relevance."""
        seen = set()
        for n, result in enumerate(results):
            index, score = getattr(result, "index", None), getattr(result, "relevance_score", None)
            if type(index) is not int or not 0 <= index < count:
                return f"result {n} has index {self._shown(index)} ({count} documents were sent: 0 to {count - 1})"
            if index in seen:
                return f"result {n} has index {index} again"
            seen.add(index)
            if not is_relevance(score):
                return f"result for document {index} has relevance_score {self._shown(score)} (a relevance is 0 to 1)"
        return None if len(results) == count else f"{len(results)} results for {count} documents"

    def _shown(self, value) -> str:
        """A value of the reply as its JSON wrote it (`true`, `NaN`, `"0.9"`), keyless and short."""
        return self._calls.excerpt(json.dumps(value, default=str))
