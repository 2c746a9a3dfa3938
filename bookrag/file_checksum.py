"""A file's sha256, read in chunks: a model or adapter file may be gigabytes, which a whole read would hold in
memory at once."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
