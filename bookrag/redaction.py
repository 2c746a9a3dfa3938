"""Take secrets out of text a user will see: error messages, log lines, URLs.

Providers echo credentials back (an Authorization header in an error body, a key in a 400's message), and a URL
may carry a password (`http://user:secret@host`), which an HTTP client sends as `Basic base64(user:secret)`.
Everything bookrag shows about a failure goes through `scrub`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable, Iterator
from urllib.parse import quote, quote_plus, unquote

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;)\]}]+", re.IGNORECASE)  # the token, not the punctuation after it
_BASIC = re.compile(r"(Basic\s+)([A-Za-z0-9+/]+={0,2})(?![\w+/=])")
# userinfo: after a scheme (`https://user:pw@`), or bare `user:pw@host` as connection errors print it.
_USERINFO = re.compile(r"(?<=://)[^\s/@]+@|(?<![\w/@.:-])[^\s/@:]+:[^\s/@]+@(?=[\w.-])")
_URL_USERINFO = re.compile(r"://([^\s/@]+)@")
_MIN_SECRET = 8  # shorter values are too likely to be ordinary words or numbers
MASK = "***"


def mask_url(url: str) -> str:
    """`http://user:secret@host:6333/x` -> `http://***@host:6333/x`; anything else unchanged."""
    return _USERINFO.sub(f"{MASK}@", url)


def url_credentials(text: str) -> list[str]:
    """The credentials in the userinfo of URLs in `text`, decoded as a client sends them: `user:password` (what
    Basic auth encodes) and the password; a token without a password (`https://token@host`) as it is."""
    found = []
    for userinfo in _URL_USERINFO.findall(text):
        user, colon, password = userinfo.partition(":")
        found += [f"{unquote(user)}:{unquote(password)}", unquote(password)] if colon else [unquote(user)]
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without the given secrets, the values of secret-looking environment variables (names holding KEY,
    TOKEN, SECRET or PASSWORD) and the credentials in URLs of any variable (values of 8+ characters; each also
    base64- and URL-encoded, as headers and query strings carry them), and without bearer tokens, Basic credentials
    or URL userinfo."""
    values = {v for v in (*secrets, *_environment_secrets()) if v and len(v) >= _MIN_SECRET}
    for form in sorted({form for value in values for form in _encoded_forms(value)}, key=len, reverse=True):
        text = text.replace(form, MASK)
    text = _BASIC.sub(_mask_basic_credentials, text)
    return mask_url(_BEARER.sub(rf"\1{MASK}", text))


def _environment_secrets() -> Iterator[str]:
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name):
            yield value
        yield from url_credentials(value)


def _encoded_forms(secret: str) -> set[str]:
    raw = secret.encode("utf-8")
    standard, url_safe = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
    return {secret, quote(secret, safe=""), quote_plus(secret), standard, standard.rstrip("="), url_safe,
            url_safe.rstrip("=")}


def _mask_basic_credentials(match: re.Match) -> str:
    """`Basic <base64 of user:password>` -> `Basic ***`; prose ("Basic authentication failed") stays."""
    token = match.group(2)
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8") if len(token) % 4 == 0 else ""
    except (binascii.Error, UnicodeDecodeError):
        decoded = ""
    if ":" in decoded and decoded.isprintable():
        return f"{match.group(1)}{MASK}"
    return match.group(0)
