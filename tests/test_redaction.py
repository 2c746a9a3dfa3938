"""What bookrag shows of a failure never holds a secret: known keys, secret-looking variables, bearer tokens and
the userinfo of URLs are masked, in messages and in log lines."""

from __future__ import annotations

import logging

import pytest

from bookrag.cli import ScrubbingFormatter
from bookrag.redaction import mask_url, scrub


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
