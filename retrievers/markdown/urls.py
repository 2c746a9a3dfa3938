"""A page's URL on the site: Docusaurus routing (number prefixes dropped, `slug` followed), kept under the base."""

from __future__ import annotations

import logging
import re
from pathlib import PurePosixPath
from urllib.parse import quote

log = logging.getLogger(__package__)
NUMBER_PREFIX = re.compile(r"^\d+[-_.]")  # `01-ros2/02-nodes.md`: the order in the sidebar, not in the URL


def page_url(source: str, slug: object, base_url: str) -> str:
    """Docusaurus routing: an absolute slug hangs off the docs root; otherwise the path without number prefixes.

    The URL stays under `base_url`: its segments are percent-encoded, and a slug that would leave the docs root
    (`../../etc`, `//host/x`, `https://host`) is not followed: the page keeps its file-path URL, with a warning."""
    parts = [NUMBER_PREFIX.sub("", p) for p in PurePosixPath(source).with_suffix("").parts]
    if slug:
        segments = _slug_segments(str(slug), parts[:-1])
        if segments is not None:
            return _under(base_url, segments, folder=str(slug).startswith("/") and str(slug).endswith("/"))
        log.warning("%s: slug %r leaves the docs root; the page's URL follows its file path instead", source, slug)
    if parts[-1].lower() in ("index", "readme"):
        parts = parts[:-1]
    return _under(base_url, parts)


def _slug_segments(slug: str, folder: list[str]) -> list[str] | None:
    """The path segments a slug names (an absolute slug from the docs root, a relative one from the page's folder,
    `..` resolved); None if it leaves the docs root or is a URL of its own."""
    if slug.startswith("//") or re.match(r"[A-Za-z][\w+.-]*:", slug) or "\\" in slug:
        return None
    segments = [] if slug.startswith("/") else list(folder)
    for segment in slug.split("/"):
        if segment == "..":
            if not segments:
                return None
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return segments


def _under(base_url: str, segments: list[str], folder: bool = False) -> str:
    path = "/".join(quote(segment, safe="") for segment in segments)
    return base_url.rstrip("/") + "/" + path + ("/" if folder and path else "")
