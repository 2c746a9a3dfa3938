"""What bookrag shows of a failure never holds a secret: known keys, secret-looking variables, bearer tokens and
the userinfo of URLs are masked, in messages and in log lines."""

from __future__ import annotations

import logging

import httpx
import pytest

from bookrag.cli import ScrubbingFormatter
from bookrag.config import Secret
from bookrag.errors import EmbeddingError
from bookrag.redaction import mask_url, scrub
from retrievers.cohere_embedder import CohereEmbedder


@pytest.mark.parametrize("url, shown", [
    ("http://user:secret@127.0.0.1:8000/v1", "http://***@127.0.0.1:8000/v1"),
    ("https://token@qdrant.example:6333", "https://***@qdrant.example:6333"),
    ("http://127.0.0.1:6333/collections", "http://127.0.0.1:6333/collections"),
])
def test_mask_url_hides_userinfo_only(url, shown):
    assert mask_url(url) == shown


def test_scrub_masks_given_secrets_bearer_tokens_and_userinfo_in_running_text():
    text = ("failed to connect to user:pa55word@127.0.0.1:1 (Bearer sk-abc123def); key co-key-12345678 rejected, "
            "see http://127.0.0.1:1/v1 at 12:30")
    assert scrub(text, ["co-key-12345678"]) == ("failed to connect to ***@127.0.0.1:1 (Bearer ***); key *** "
                                                "rejected, see http://127.0.0.1:1/v1 at 12:30")


def test_scrub_masks_the_values_of_secret_looking_environment_variables(monkeypatch):
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "provider-key-0a9b8c")
    monkeypatch.setenv("BOOKRAG_TOP_K", "50000000")  # not secret-looking: left alone
    assert scrub("echo provider-key-0a9b8c and 50000000") == "echo *** and 50000000"


def test_log_lines_and_their_tracebacks_are_scrubbed(monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-key-77e1d0")
    try:
        raise ConnectionError("refused by http://admin:pw-in-url@qdrant.example:6333 for qdrant-key-77e1d0")
    except ConnectionError as exc:
        record = logging.LogRecord("qdrant_client", logging.WARNING, __file__, 1, "retrying %s", ("http://u:p@h:1",),
                                   (type(exc), exc, exc.__traceback__))
    line = ScrubbingFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line.startswith("WARNING qdrant_client: retrying http://***@h:1")
    assert "ConnectionError" in line  # the traceback is kept...
    assert "pw-in-url" not in line and "qdrant-key-77e1d0" not in line  # ...without the secrets


def test_scrub_masks_basic_credentials_but_not_the_word_basic_in_prose():
    text = "echoed Authorization: Basic dXNlcjpodW50ZXIycGFzcw==; Basic authentication failed; Basic setup done"
    assert scrub(text) == "echoed Authorization: Basic ***; Basic authentication failed; Basic setup done"


@pytest.mark.parametrize("form", [
    "cHJvdmlkZXIta2V5LTBhOWI4Yw==",  # base64, as a Basic header or a config dump carries it
    "cHJvdmlkZXIta2V5LTBhOWI4Yw",  # base64 without its padding (JWT-style, URL-safe)
    "provider-key-0a9b8c%2F%2B",  # URL-encoded, as a query string carries it
])
def test_scrub_masks_a_configured_secret_in_its_encoded_forms(monkeypatch, form):
    secret = "provider-key-0a9b8c/+" if "%" in form else "provider-key-0a9b8c"
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", secret)
    assert scrub(f"sent {form} to the server") == "sent *** to the server"
    assert scrub(f"sent {form} to the server", [secret]) == "sent *** to the server"


def test_scrub_masks_the_credentials_of_a_configured_url_in_every_form(monkeypatch):
    """BOOKRAG_LM_API_BASE is no secret-looking name, but its userinfo is a secret: a server that echoes the
    Authorization header shows it base64-encoded, a log line may show it decoded or percent-encoded."""
    monkeypatch.setenv("BOOKRAG_LM_API_BASE", "http://bookrag-user:hunter2%2Fpass@127.0.0.1:8000/v1")
    for shown in ("Ym9va3JhZy11c2VyOmh1bnRlcjIvcGFzcw==", "bookrag-user:hunter2/pass", "hunter2/pass",
                  "hunter2%2Fpass"):
        assert scrub(f"got {shown} back") == "got *** back"


@pytest.mark.parametrize("text, shown", [
    ("http://alice:Hunter2@Secret9@127.0.0.1:8000/v1", "http://***@127.0.0.1:8000/v1"),  # an unencoded `@`
    ("cannot connect to alice:Hunter2@Secret9@127.0.0.1:8000 (refused)", ("cannot connect to ***@127.0.0.1:8000 "
                                                                            "(refused)")),
])
def test_userinfo_is_masked_up_to_the_last_at_before_the_host(text, shown):
    assert scrub(text) == shown


def test_a_password_with_an_unencoded_at_is_masked_in_all_its_pieces_when_a_server_echoes_it(monkeypatch):
    """A client may split the userinfo at the first `@` or at the last: each piece is a secret."""
    monkeypatch.setenv("BOOKRAG_LM_API_BASE", "http://alice:Hunter2@Secret9@127.0.0.1:8000/v1")
    shown = scrub("host Secret9@127.0.0.1 rejected password Hunter2 of alice:Hunter2@Secret9 (Hunter2@Secret9)")
    assert "Secret9" not in shown and "Hunter2" not in shown


@pytest.mark.parametrize("url, shown", [
    ("https://lm.example/v1?api_key=QuerySecret987654", "https://lm.example/v1?api_key=***"),
    ("https://h/x?model=m&access_token=t0k&X-Auth=a1&Password=pw#frag", ("https://h/x?model=m&access_token=***&X-Auth=***"
                                                                        "&Password=***#frag")),
    ("https://h/x?client_secret=s3&page=2", "https://h/x?client_secret=***&page=2"),
    ("https://h/x?page=2&q=token", "https://h/x?page=2&q=token"),  # a value named otherwise stays, whatever it says
])
def test_credential_named_query_parameters_are_masked_in_urls(url, shown):
    assert mask_url(url) == shown
    assert scrub(f"POST {url} failed") == f"POST {shown} failed"


def test_a_query_key_of_a_configured_url_is_masked_wherever_a_server_echoes_it(monkeypatch):
    monkeypatch.setenv("BOOKRAG_LM_API_BASE", "https://lm.example/v1?api_key=QuerySecret987654")
    assert scrub("the key QuerySecret987654 is not valid") == "the key *** is not valid"


@pytest.mark.parametrize("variable", ["COHERE_API_KEY", "QDRANT_API_KEY", "OPENAI_API_KEY", "HF_TOKEN",
                                      "PGPASSWORD"])
def test_a_configured_secret_of_any_length_is_masked(monkeypatch, variable):
    monkeypatch.setenv(variable, "k3y4567")  # 7 characters
    assert scrub("invalid api key 'k3y4567' (k3y4567)") == "invalid api key '***' (***)"
    assert scrub("given", ["ab1"]) == "given" and scrub("key ab1 rejected", ["ab1"]) == "key *** rejected"


def test_a_very_short_secret_is_masked_as_a_whole_token_not_inside_words(monkeypatch):
    monkeypatch.setenv("TINY_API_KEY", "a")
    assert scrub("key a is not a valid key for model aardvark") == "key *** is not *** valid key for model aardvark"


def test_a_value_that_only_looks_secret_keeps_the_8_character_floor(monkeypatch):
    """TOKENIZERS_PARALLELISM and BOOKRAG_CHUNK_TOKENS hold TOKEN but are no secrets: `false` and `abc` stay
    readable in every message (a configuration error shows the bad value)."""
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("BOOKRAG_CHUNK_TOKENS", "abc")
    monkeypatch.setenv("SECRET_STORE_PATH", "/run/secret-store")
    assert scrub("stream=false, store /run/secret-store, got 'abc'") == "stream=false, store ***, got 'abc'"


def test_a_short_cohere_key_a_400_echoes_is_masked(monkeypatch):
    """Cohere's v2 embed endpoint, as an httpx transport: a 400 whose message quotes the 7-character key."""
    key = "k3y4567"
    monkeypatch.delenv("COHERE_API_KEY", raising=False)  # the key is known only to the embedder

    def cohere(request: httpx.Request) -> httpx.Response:
        assert (request.url.path, request.headers["authorization"]) == ("/v2/embed", f"Bearer {key}")
        return httpx.Response(400, json={"message": f"invalid request: key {key} has no access to this model"})

    embedder = CohereEmbedder(Secret(key), httpx_client=httpx.Client(transport=httpx.MockTransport(cohere)))
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_documents(["a chunk"])
    assert "invalid request: key *** has no access to this model" in str(caught.value)
    assert key not in str(caught.value)


def test_a_masked_query_value_keeps_the_punctuation_around_its_url():
    assert scrub("failed (server http://h/v1?api_key=QuerySecret987654), retry") == \
        "failed (server http://h/v1?api_key=***), retry"


def test_a_log_line_quoting_a_book_shows_its_escape_sequences_inert():
    record = logging.LogRecord("retrievers.markdown", logging.WARNING, __file__, 1, "%s: slug %s leaves the docs root",
                               ("intro\x1b]0;pwned\x07.md", "\x1b[2J/x"), None)
    line = ScrubbingFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == "WARNING retrievers.markdown: intro\\x1b]0;pwned\\x07.md: slug \\x1b[2J/x leaves the docs root"
