"""Take secrets out of text a user will see: error messages, log lines, URLs.

Providers echo credentials back (an Authorization header in an error body, a key in a 400's message), and a URL
may carry a password (`http://user:secret@host`). Everything bookrag shows about a failure goes through `scrub`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;)\]}]+", re.IGNORECASE)  # the token, not the punctuation after it
# userinfo: after a scheme (`https://user:pw@`), or bare `user:pw@host` as connection errors print it.
_USERINFO = re.compile(r"(?<=://)[^\s/@]+@|(?<![\w/@.:-])[^\s/@:]+:[^\s/@]+@(?=[\w.-])")
MASK = "***"


def mask_url(url: str) -> str:
    """`http://user:secret@host:6333/x` -> `http://***@host:6333/x`; anything else unchanged."""
    return _USERINFO.sub(f"{MASK}@", url)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without the given secrets, the values of secret-looking environment variables (names holding KEY,
    TOKEN, SECRET or PASSWORD, values of 8+ characters), bearer tokens and URL userinfo."""
    values = [*secrets, *(v for name, v in os.environ.items() if _SECRET_NAME.search(name))]
    for value in sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True):
        text = text.replace(value, MASK)
    return mask_url(_BEARER.sub(rf"\1{MASK}", text))
