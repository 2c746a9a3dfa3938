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
