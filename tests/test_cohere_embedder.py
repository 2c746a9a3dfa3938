"""CohereEmbedder against a fake Cohere API that speaks the real HTTP protocol (through the real SDK): in process
through an httpx transport, and for the command lines as an HTTP server on 127.0.0.1 (the SDK reads CO_API_URL)."""

from __future__ import annotations

import json
import re
import traceback

import httpx
import pytest
from conftest import SMALL_BOOK, clean_env, run_script, write_book
from fake_cohere import (
    KEY,
    CohereServer,
    FakeCohere,
    embed_reply,
    fake_vector,
    gateway_pages_echoing_the_key,
    key_pieces_in,
)

from bookrag.config import Secret, Settings
from bookrag.errors import ConfigError, EmbeddingError, ExitCode
from retrievers.backends import make_embedder
from retrievers.cohere_embedder import CohereEmbedder
from retrievers.embedding_cache import CachedEmbedder


def cohere_embedder(fake: FakeCohere, key: str = KEY, sleeps: list | None = None, **kwargs) -> CohereEmbedder:
    sleep = sleeps.append if sleeps is not None else (lambda seconds: None)
    return CohereEmbedder(Secret(key), httpx_client=fake.client(), sleep=sleep, **kwargs)


def test_requests_follow_the_v2_embed_protocol():
    fake = FakeCohere()
    cohere_embedder(fake).embed_documents(["a chunk"])
    (request,) = fake.requests
    assert request.headers["content-type"] == "application/json"
    assert fake.bodies == [
        {
            "texts": ["a chunk"],
            "model": "embed-english-v3.0",
            "input_type": "search_document",
            "embedding_types": ["float"],
        }
    ]


def test_documents_go_in_batches_of_at_most_96_and_come_back_in_order():
    fake = FakeCohere()
    texts = [f"chunk number {i}" + "!" * (i % 7) for i in range(200)]
    vectors = cohere_embedder(fake).embed_documents(texts)
    assert [len(body["texts"]) for body in fake.bodies] == [96, 96, 8]
    assert vectors == [fake_vector(text) for text in texts]


def test_no_documents_make_no_request():
    fake = FakeCohere()
    assert cohere_embedder(fake).embed_documents([]) == []
    assert fake.requests == []


def test_documents_are_search_documents_and_queries_search_queries():
    fake = FakeCohere()
    embedder = cohere_embedder(fake)
    embedder.embed_documents(["a chunk"])
    vector = embedder.embed_query("a question?")
    assert [body["input_type"] for body in fake.bodies] == ["search_document", "search_query"]
    assert vector == fake_vector("a question?")
    assert len(vector) == embedder.dim == 1024


@pytest.mark.parametrize(
    "failure",
    [429, 500, 503, (502, "<html>Bad Gateway</html>"), httpx.ReadTimeout, httpx.ConnectError],
    ids=["429", "500", "503", "502-html", "read-timeout", "connect-error"],
)
def test_transient_failure_is_retried_after_a_second(failure):
    fake, sleeps = FakeCohere([failure]), []
    vector = cohere_embedder(fake, sleeps=sleeps).embed_query("q")
    assert vector == fake_vector("q")
    assert len(fake.requests) == 2
    assert sleeps == [1.0]


def test_persistent_server_error_fails_after_exactly_three_tries():
    fake, sleeps = FakeCohere([500] * 10), []
    with pytest.raises(EmbeddingError, match="3 times") as caught:
        cohere_embedder(fake, sleeps=sleeps).embed_documents(["a chunk"])
    assert "HTTP 500" in str(caught.value)
    assert len(fake.requests) == 3
    assert sleeps == [1.0, 2.0]


def test_persistent_timeout_says_it_timed_out():
    fake = FakeCohere([httpx.ReadTimeout] * 3)
    with pytest.raises(EmbeddingError, match="timed out"):
        cohere_embedder(fake).embed_query("q")
    assert len(fake.requests) == 3


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_is_a_config_error_naming_cohere_api_key(status):
    fake, sleeps = FakeCohere([status]), []
    with pytest.raises(ConfigError, match="COHERE_API_KEY") as caught:
        cohere_embedder(fake, sleeps=sleeps).embed_query("q")
    assert str(status) in str(caught.value)
    assert KEY not in str(caught.value)
    assert len(fake.requests) == 1 and sleeps == []


def test_wrong_key_is_rejected_without_showing_it():
    wrong = "co-wrong-key-77d2e0"
    with pytest.raises(ConfigError, match=r"COHERE_API_KEY \(401\)") as caught:
        cohere_embedder(FakeCohere(), key=wrong).embed_query("q")
    assert wrong not in "".join(traceback.format_exception(caught.value))


def test_bad_request_is_not_retried_and_shows_the_api_message():
    fake, sleeps = FakeCohere([400]), []
    with pytest.raises(EmbeddingError, match="HTTP 400: simulated failure") as caught:
        cohere_embedder(fake, sleeps=sleeps).embed_documents(["a chunk"])
    assert "COHERE_MODEL" in str(caught.value)
    assert len(fake.requests) == 1 and sleeps == []


def test_vectors_of_another_size_are_an_error():
    fake = FakeCohere(dim=384)
    with pytest.raises(
        EmbeddingError, match=r"'embed-english-light-v3.0' returned 1 vectors of size \[384\]"
    ):
        cohere_embedder(fake, model="embed-english-light-v3.0").embed_query("q")


def test_timeout_setting_reaches_the_http_request():
    fake = FakeCohere()
    cohere_embedder(fake, timeout=7.5).embed_query("q")
    assert fake.requests[0].extensions["timeout"] == {"connect": 7.5, "read": 7.5, "write": 7.5, "pool": 7.5}


@pytest.mark.parametrize(
    "failures",
    [[401], [400], [500] * 3, [httpx.ReadTimeout] * 3, [httpx.ConnectError] * 3],
    ids=["401", "400", "500", "timeout", "connect-error"],
)
def test_key_never_appears_in_the_embedder_or_its_errors(failures):
    embedder = cohere_embedder(FakeCohere(failures))
    assert KEY not in str(embedder) and KEY not in repr(embedder)
    with pytest.raises((ConfigError, EmbeddingError)) as caught:
        embedder.embed_query("q")
    assert KEY not in "".join(traceback.format_exception(caught.value))
    assert KEY not in repr(caught.value)


def test_missing_key_is_a_config_error():
    with pytest.raises(ConfigError, match="COHERE_API_KEY"):
        CohereEmbedder(Secret(""))


def test_make_embedder_builds_a_cohere_embedder():
    embedder = make_embedder(Settings(embedder="cohere", cohere_api_key=Secret("k")), cached=False)
    assert isinstance(embedder, CohereEmbedder)
    assert (embedder.name, embedder.model_id, embedder.dim) == ("cohere1024", "embed-english-v3.0", 1024)


def test_a_bad_request_that_echoes_the_key_does_not_show_it():
    """The key is the embedder's own (not in the environment), so only the embedder can scrub it."""
    with pytest.raises(EmbeddingError, match="HTTP 400: simulated failure for Bearer") as caught:
        cohere_embedder(FakeCohere([400], echo=True)).embed_documents(["a chunk"])
    assert KEY not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize("reply", [(200, '{"embeddings": {"float": [[0.1, '), (200, '{"id": "x"}')],
                         ids=["truncated-json", "json-without-embeddings"])
def test_a_malformed_reply_is_reported_as_one_not_as_a_wrong_cohere_model(reply):
    with pytest.raises(EmbeddingError, match="not the embed JSON") as caught:
        cohere_embedder(FakeCohere([reply])).embed_query("q")
    assert "COHERE_MODEL" not in str(caught.value)


@pytest.mark.parametrize("value, shown", [(float("nan"), "NaN"), (float("inf"), "Infinity"),
                                          (float("-inf"), "-Infinity"), (1e39, "1e+39"), ("0.5", '"0.5"'),
                                          (True, "true"), (None, "null")],
                         ids=["nan", "infinity", "minus-infinity", "beyond-32-bits", "string", "true", "null"])
def test_a_vector_holding_what_is_no_finite_number_is_refused_and_not_cached(tmp_path, value, shown):
    """A NaN would be stored in the index (where that chunk drops out of every search by meaning) and in the cache
    (where it outlives `ingest.py --recreate`); 1e39 is infinite once stored in 32 bits."""
    texts = ["a chunk", "another chunk"]
    vectors = [fake_vector(text) for text in texts]
    vectors[1][5] = value
    fake = FakeCohere([embed_reply(vectors, texts)])
    cache = CachedEmbedder(cohere_embedder(fake), tmp_path / "cache.sqlite")
    with pytest.raises(EmbeddingError, match=re.escape(f"JSON whose vector 1 holds {shown} at position 5 (not a "
                                                       "finite 32-bit number), not the embed JSON")) as caught:
        cache.embed_documents(texts)
    assert caught.value.exit_code == ExitCode.RUNTIME
    assert cache.embed_documents(texts) == [fake_vector(text) for text in texts]  # the service recovered
    assert len(fake.requests) == 2  # nothing of the refused reply was cached


@pytest.mark.parametrize("position", [0, 1])
def test_a_reply_with_null_in_place_of_a_vector_is_refused_not_a_crash(position):
    texts = ["a chunk", "another chunk"]
    vectors = [fake_vector(text) for text in texts]
    vectors[position] = None
    with pytest.raises(EmbeddingError, match=f"JSON whose vector {position} is null, not a list of numbers") as caught:
        cohere_embedder(FakeCohere([embed_reply(vectors, texts)])).embed_documents(texts)
    assert caught.value.exit_code == ExitCode.RUNTIME


class UncheckedCohere:
    """Cohere's embedder as it was before its replies were checked: what it returned went into the cache."""

    name, model_id, dim = CohereEmbedder.name, "embed-english-v3.0", CohereEmbedder.dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float("nan")] * self.dim for _ in texts]


def test_a_nan_vector_an_older_bookrag_cached_is_not_served_but_asked_for_again(tmp_path):
    CachedEmbedder(UncheckedCohere(), tmp_path / "cache.sqlite").embed_documents(["a chunk"])
    fake = FakeCohere()
    cache = CachedEmbedder(cohere_embedder(fake), tmp_path / "cache.sqlite")
    assert cache.embed_documents(["a chunk"]) == [fake_vector("a chunk")]
    assert cache.embed_documents(["a chunk"]) == [fake_vector("a chunk")]
    assert len(fake.requests) == 1  # asked once, then served the vector that replaced the NaN one


def test_a_non_json_200_that_echoes_the_key_shows_no_piece_of_it():
    """The message quotes the start of the body: the key is taken out first, and then the body is cut (cut first,
    the key's first characters are no longer the key and stay)."""
    for page in gateway_pages_echoing_the_key():
        with pytest.raises(EmbeddingError, match="HTTP 200 with a body that is not JSON") as caught:
            cohere_embedder(FakeCohere([page])).embed_query("q")
        assert key_pieces_in("".join(traceback.format_exception(caught.value))) == [], page


def cohere_env(tmp_path, server: CohereServer, **extra) -> dict[str, str]:
    return clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
                     BOOKRAG_EMBEDDER="cohere", COHERE_API_KEY=KEY, CO_API_URL=server.url, **extra)


def test_ingest_cli_talks_to_cohere_over_http_and_never_prints_an_echoed_key(tmp_path, cohere_server):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    cohere_server.fake.failures, cohere_server.fake.echo = [400], True
    result = run_script("ingest.py", book, cwd=tmp_path, env=cohere_env(tmp_path, cohere_server))
    assert result.returncode == 3, result.stderr
    assert "Cohere refused the embed request (HTTP 400: simulated failure for Bearer ***)" in result.stderr
    assert KEY not in result.stdout + result.stderr
    assert len(cohere_server.fake.requests) == 1
    done = run_script("ingest.py", book, cwd=tmp_path, env=cohere_env(tmp_path, cohere_server))  # the fake is fine now
    assert done.returncode == 0, done.stderr
    assert re.search(r"book-[0-9a-f]{8}__cohere1024: files 4, chunks 7, embedded 7", done.stdout)


@pytest.mark.parametrize("command", [["ask.py", "What is a node?"], ["evaluate.py"]], ids=["ask", "evaluate"])
def test_an_artifact_of_another_embedder_is_refused_before_anything_is_embedded(tmp_path, cohere_server, command):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    artifact = tmp_path / "artifacts" / "book"
    artifact.mkdir(parents=True)
    (artifact / "manifest.json").write_text(json.dumps({
        "bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": "minilm384",
        "collection": "book__minilm384", "book": str(book), "index_fingerprint": "0" * 16}))
    (artifact / "program.json").write_text("{}")
    result = run_script(*command, "--book", book, "--program", artifact, cwd=tmp_path,
                        env=cohere_env(tmp_path, cohere_server))
    assert result.returncode == 2, result.stderr
    assert "compiled with the minilm384 embedder but cohere1024 is configured" in result.stderr
    assert "BOOKRAG_EMBEDDER" in result.stderr
    assert cohere_server.fake.requests == []  # not one text of the book was sent to Cohere


def test_ingest_refuses_a_nan_vector_and_the_next_ingest_asks_cohere_again(tmp_path, cohere_server):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    vectors = [[0.5] * 1024 for _ in range(7)]  # the small book's 7 chunks
    vectors[3][0] = float("nan")
    cohere_server.fake.failures = [embed_reply(vectors, ["?"] * 7)]
    result = run_script("ingest.py", book, cwd=tmp_path, env=cohere_env(tmp_path, cohere_server))
    assert result.returncode == 3, result.stderr
    assert "JSON whose vector 3 holds NaN at position 0 (not a finite 32-bit number)" in result.stderr
    again = run_script("ingest.py", "--recreate", book, cwd=tmp_path, env=cohere_env(tmp_path, cohere_server))
    assert again.returncode == 0, again.stderr
    assert re.search(r"chunks 7, embedded 7", again.stdout)
    assert len(cohere_server.fake.requests) == 2
