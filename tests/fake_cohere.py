"""A fake Cohere API speaking the real HTTP protocol, for the tests of the Cohere embedder and reranker
(through the real SDK): in process through an httpx transport (`FakeCohere.client()`), and for the command
lines as an HTTP server on 127.0.0.1 (`CohereServer`; the SDK reads CO_API_URL), which the `cohere_server`
fixture serves."""

from __future__ import annotations

import json
import re
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from bookrag.config import Secret
from retrievers.cohere_reranker import CohereReranker

KEY = "co-test-key-4f9a1c"  # distinctive, so a leak anywhere is easy to spot
INPUT_TYPES = {"search_document", "search_query", "classification", "clustering", "image"}


def fake_vector(text: str, dim: int = 1024) -> list[float]:
    """A vector that identifies its text, so order mix-ups show."""
    return [float(len(text)), float(sum(map(ord, text)))] + [0.0] * (dim - 2)


def embed_reply(vectors: list[list], texts: list[str]) -> dict:
    """Cohere's v2 embed reply carrying `vectors`."""
    return {
        "id": str(uuid.uuid4()),
        "embeddings": {"float": vectors},
        "texts": texts,
        "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": len(texts)}},
        "response_type": "embeddings_by_type",
    }


class FakeCohere:
    """POST https://api.cohere.com/v2/embed as Cohere answers it: bearer auth, JSON in, JSON out.

    `failures` are answered first, one per request: an HTTP status (with Cohere's JSON error body),
    a `(status, text)` pair for a non-JSON body (as a gateway sends), a dict for a 200 reply of that JSON (Python's
    JSON, which writes NaN and Infinity as JavaScript does), or an httpx exception class.
    `echo`: error messages repeat the request's Authorization header, as careless services do.
    """

    def __init__(self, failures=(), key: str = KEY, dim: int = 1024, echo: bool = False):
        self.failures = list(failures)
        self.key = key
        self.dim = dim
        self.echo = echo
        self.requests: list[httpx.Request] = []

    @property
    def bodies(self) -> list[dict]:
        return [json.loads(request.content) for request in self.requests]

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if (request.method, request.url.path) != ("POST", "/v2/embed"):
            return self.error(404, f"no route for {request.method} {request.url.path}")
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return self.error(401, "invalid api token")
        if self.failures:
            return self.failure(request, self.failures.pop(0))
        body = json.loads(request.content)
        texts = body.get("texts") or []
        if len(texts) > 96:
            return self.error(400, f"invalid request: texts must have at most 96 items, got {len(texts)}")
        if body.get("input_type") not in INPUT_TYPES:
            return self.error(400, f"invalid request: input_type {body.get('input_type')!r}")
        return httpx.Response(200, json=embed_reply([fake_vector(text, self.dim) for text in texts], texts))

    def failure(self, request: httpx.Request, failure) -> httpx.Response:
        """The answer to `request` that `failure` (one of `failures`) stands for."""
        if isinstance(failure, int):
            echoed = f" for {request.headers['authorization']}" if self.echo else ""
            return self.error(failure, f"simulated failure{echoed}")
        if isinstance(failure, tuple):
            return httpx.Response(failure[0], text=failure[1], headers={"content-type": "text/html"})
        if isinstance(failure, dict):
            return httpx.Response(200, content=json.dumps(failure).encode(), headers={"content-type": "application/json"})
        raise failure("simulated", request=request)

    @staticmethod
    def error(status: int, message: str) -> httpx.Response:
        return httpx.Response(status, json={"id": str(uuid.uuid4()), "message": message})


class CohereServer(ThreadingHTTPServer):
    """A FakeCohere served over HTTP on 127.0.0.1: point the SDK at it with CO_API_URL=server.url."""

    daemon_threads = True

    def __init__(self, fake: FakeCohere):
        super().__init__(("127.0.0.1", 0), _CohereHandler)
        self.fake = fake

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _CohereHandler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = httpx.Request("POST", f"{self.server.url}{self.path}", headers=dict(self.headers), content=body)
        response = self.server.fake(request)
        self.send_response(response.status_code)
        self.send_header("Content-Type", response.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    def log_message(self, *args):
        pass


def gateway_pages_echoing_the_key() -> list[tuple[int, str]]:
    """Non-JSON 200 bodies (a gateway's page) echoing KEY after 0 to 299 characters, so that whatever length an
    error message quotes, some page's key straddles the cut."""
    return [(200, "<html><body>" + "." * offset + f" your key {KEY} was used </body></html>") for offset in range(300)]


def key_pieces_in(text: str) -> list[str]:
    """The 6-character pieces of KEY that `text` holds."""
    return [KEY[i : i + 6] for i in range(len(KEY) - 5) if KEY[i : i + 6] in text]


# -- rerank --------------------------------------------------------------------------------------------------

WORD = re.compile(r"[a-z0-9]+")


def relevance(query: str, document: str) -> float:
    """The fake cross-encoder: the share of the query's words the document holds, squeezed into (0, 1)."""
    words = set(WORD.findall(query.lower()))
    found = words & set(WORD.findall(document.lower()))
    return round(0.01 + 0.98 * len(found) / max(1, len(words)), 6)


class FakeCohereRerank(FakeCohere):
    """FakeCohere (POST /v2/embed) with POST /v2/rerank as Cohere answers it: bearer auth, every document scored,
    the results best first with each document's index. `rerank_failures` are answered first, one per rerank
    request, as `failures` are for embed requests."""

    def __init__(self, rerank_failures=(), **kwargs):
        super().__init__(**kwargs)
        self.rerank_failures = list(rerank_failures)

    @property
    def reranks(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests if r.url.path == "/v2/rerank"]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/v2/rerank":
            return super().__call__(request)
        self.requests.append(request)
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return self.error(401, "invalid api token")
        if self.rerank_failures:
            return self.failure(request, self.rerank_failures.pop(0))
        body = json.loads(request.content)
        documents, query = body.get("documents") or [], body.get("query") or ""
        if not query or not body.get("model"):
            return self.error(400, "invalid request: query and model are required")
        if not 1 <= len(documents) <= 1000:
            return self.error(400, f"invalid request: between 1 and 1000 documents, got {len(documents)}")
        scored = sorted(((relevance(query, d), i) for i, d in enumerate(documents)), key=lambda x: (-x[0], x[1]))
        top_n = body.get("top_n") or len(documents)
        return httpx.Response(200, json={
            "id": str(uuid.uuid4()),
            "results": [{"index": i, "relevance_score": s} for s, i in scored[:top_n]],
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
        })


def cohere_reranker(fake: FakeCohereRerank, key: str = KEY, sleeps: list | None = None, **kwargs) -> CohereReranker:
    sleep = sleeps.append if sleeps is not None else (lambda seconds: None)
    return CohereReranker(Secret(key), httpx_client=fake.client(), sleep=sleep, **kwargs)
