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
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# A name that ends in one of those words holds a secret for sure (OPENAI_API_KEY, HF_TOKEN, PGPASSWORD): its value is
# masked whatever its length. Other names merely holding one (TOKENIZERS_PARALLELISM=false, BOOKRAG_LM_MAX_TOKENS=512)
# keep the 8-char floor.
_KNOWN_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;)\]}]+", re.IGNORECASE)  # the token, not the punctuation after it
_BASIC = re.compile(r"(Basic\s+)([A-Za-z0-9+/]+={0,2})(?![\w+/=])")
# userinfo, up to the LAST `@` before the host (a password may hold an unencoded `@`, and clients split there):
# after a scheme (`https://user:pw@`), or bare `user:pw@host` as connection errors print it.
_USERINFO = re.compile(r"(?<=://)[^\s/?#]+@|(?<![\w/@.:-])[^\s/@:]+:[^\s/?#]*@(?=[\w.-])")
_URL_USERINFO = re.compile(r"://([^\s/?#]+)@")
# A query parameter whose name says it carries a credential (`?api_key=...`, `&access_token=...`, `&auth=...`); its
# value ends where a URL in running text does (`(server http://h/v1?key=k)` keeps its parenthesis).
_QUERY_SECRET = re.compile(r"(?<=[?&;])([^=\s&#?;]*(?:key|token|secret|password|auth)[^=\s&#?;]*=)"
                           r"([^&\s#\"'<>,;)\]}]+)", re.IGNORECASE)
_MIN_SECRET = 8  # a value not known to be a secret is masked only from this length: shorter ones are ordinary words
_WORD = "A-Za-z0-9"  # a short known secret is masked only as a whole token, not inside a longer run of these
MASK = "***"


def mask_url(url: str) -> str:
    """`http://user:secret@host:6333/x?api_key=k` -> `http://***@host:6333/x?api_key=***`; anything else unchanged."""
    return _QUERY_SECRET.sub(rf"\1{MASK}", _USERINFO.sub(f"{MASK}@", url))


def url_credentials(text: str) -> list[str]:
    """The credentials in the URLs in `text`, decoded as a client sends them: of the userinfo, `user:password` (what
    Basic auth encodes) and the password, a token without a password (`https://token@host`) as it is; and the values
    of credential-named query parameters (`?api_key=...`). A password with an unencoded `@` gives its pieces too:
    a client that splits the userinfo at the first `@` sends (and a server may echo) only part of it."""
    found = []
    for userinfo in _URL_USERINFO.findall(text):
        user, colon, password = userinfo.partition(":")
        found += [f"{unquote(user)}:{unquote(password)}", unquote(password)] if colon else [unquote(user)]
        found += [unquote(piece) for piece in password.split("@")] if "@" in password else []
    return found + [unquote(value) for _, value in _QUERY_SECRET.findall(text)]


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without the given secrets, the values of secret-looking environment variables (names holding KEY,
    TOKEN, SECRET or PASSWORD) and the credentials in URLs of any variable (each also base64- and URL-encoded, as
    headers and query strings carry them), and without bearer tokens, Basic credentials, URL userinfo or
    credential-named query parameters.

    A known secret (given, in a URL, or in a variable whose name ends in KEY, TOKEN, SECRET or PASSWORD) is masked
    whatever its length; one under 8 characters only as a whole token (`k3y` in `key k3y rejected`, not the `a` in
    every word when the key is `a`). A value that is only secret-looking is masked from 8 characters."""
    known, looking = _environment_secrets()
    values = {v for v in (*secrets, *known) if v} | {v for v in looking if len(v) >= _MIN_SECRET}
    for form in sorted({form for value in values for form in _encoded_forms(value)}, key=len, reverse=True):
        text = text.replace(form, MASK) if len(form) >= _MIN_SECRET else _whole_token(form).sub(MASK, text)
    text = _BASIC.sub(_mask_basic_credentials, text)
    return mask_url(_BEARER.sub(rf"\1{MASK}", text))


def _whole_token(value: str) -> re.Pattern:
    return re.compile(rf"(?<![{_WORD}]){re.escape(value)}(?![{_WORD}])")


def _environment_secrets() -> tuple[list[str], list[str]]:
    """(known secrets, values that only look secret) of the process environment."""
    known, looking = [], []
    for name, value in os.environ.items():
        if _KNOWN_SECRET_NAME.search(name):
            known.append(value)
        elif _SECRET_NAME.search(name):
            looking.append(value)
        known += url_credentials(value)
    return known, looking


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
