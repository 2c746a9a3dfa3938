"""MkDocs' syntax (with Material and pymdown-extensions): the `nav` of mkdocs.yml (titling pages), `!!!`/`???`
admonitions and `===` content tabs (indented bodies), `///` blocks, and the `--8<--` and `{* file *}` snippets."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import yaml

from retrievers.markdown.fences import fence_state
from retrievers.markdown.front_matter import load_bounded_yaml
from retrievers.markdown.inline import plain
from retrievers.markdown.markup import block_title
from retrievers.markdown.page import book_relative
from retrievers.markdown.syntax import Syntax

log = logging.getLogger(__package__)
MKDOCS_CONFIGS = ("mkdocs.yml", "mkdocs.yaml")
MKDOCS_CONFIG_MAX_CHARS = 1024 * 1024  # front matter's bound, for mkdocs.yml read for its nav: large sites' ~100 KB

_INCLUDE = re.compile(r"^[ \t]*\{\*.*\*\}[ \t]*$", re.MULTILINE)
_SNIPPET_BLOCK = re.compile(r"^[ \t]*-{2,}8<-{2,}[ \t]*\n(?:.*\n)*?[ \t]*-{2,}8<-{2,}[ \t]*$", re.MULTILINE)
_SNIPPET_LINE = re.compile(r"^[ \t]*-{2,}8<-{2,}.*$", re.MULTILINE)
_BLOCK_MARKER = re.compile(r"^\s*/{3,}[ \t]*[\w-]*[ \t]*(?:\|[ \t]*(.*?))?[ \t]*$")  # `/// note | Title`, `///`
# `!!! note "Title"`, `???+ tip`, and Material's content tabs `=== "Ubuntu"` (`===!`, `===+`); a tab has a title,
# and a bare `===` underlines a setext heading
_INDENTED_ADMONITION = re.compile(
    r'^([ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+[\w-]+)*|===[!+]?(?=[ \t]+"))(?:[ \t]+"(.*)")?[ \t]*$')


def _drop_includes(text: str, page_dir: Path, book_root: Path) -> str:
    """`{* file *}` macros and `--8<--` snippets name files relative to the site's project root, which a docs/
    folder does not hold: their lines go rather than show as syntax."""
    return _SNIPPET_LINE.sub("", _SNIPPET_BLOCK.sub("", _INCLUDE.sub("", text)))


def _unindent_admonitions(lines: list[str]) -> list[str]:
    """`!!! note "Title"` / `??? note` / `???+ note` / `=== "Tab"`: the marker goes (a title stays, bold) and the
    body, indented under it, is dedented so its paragraphs, lists and code read as the page's own."""
    out: list[str] = []
    fence = None
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        fence, in_code = fence_state(line, fence)
        marker = None if in_code else _INDENTED_ADMONITION.match(line)
        if not marker:
            out.append(line)
            continue
        width = len(marker.group(1).expandtabs(4)) + 4
        body: list[str] = []
        while number < len(lines) and (inner := _dedented(lines[number], width)) is not None:
            body.append(inner)
            number += 1
        out += block_title(marker.group(2)) + _unindent_admonitions(body) + [""]
    return out


def _dedented(line: str, width: int) -> str | None:
    """The line without `width` columns of indentation (tabs count 4); None when it is not indented that far."""
    if not line.strip():
        return ""
    lead = len(line) - len(line.lstrip(" \t"))
    indent = line[:lead].expandtabs(4)
    return indent[width:] + line[lead:] if len(indent) >= width else None


def _block_marker(line: str) -> list[str] | None:
    """`/// note | Technical Details`, `//// tab | Python 3.10+`: the marker goes, its title stays."""
    marker = _BLOCK_MARKER.match(line)
    return block_title(marker.group(1)) if marker else None


class _TolerantLoader(yaml.SafeLoader):
    """A safe YAML loader that reads tags it does not know (MkDocs' `!!python/name:...`, `!ENV`) as null."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _nav_titles(book: Path) -> dict[str, str]:
    """MkDocs' `nav` (`- Setup: guide/setup.md`, sections nested), from mkdocs.yml in the book folder or, since
    users pass its docs/ folder, its parent. Nav paths are relative to the config's `docs_dir`."""
    config_path = next((d / name for d in (book, book.parent) for name in MKDOCS_CONFIGS if (d / name).is_file()), None)
    if config_path is None:
        return {}
    try:
        config = load_bounded_yaml(config_path.read_text(encoding="utf-8-sig"), _TolerantLoader,
                                   MKDOCS_CONFIG_MAX_CHARS)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        log.warning("ignored %s for page titles: %s", config_path, exc)
        return {}
    if not isinstance(config, dict):
        return {}
    docs_dir = config_path.parent / str(config.get("docs_dir") or "docs")
    titles: dict[str, str] = {}
    for title, target in _nav_entries(config.get("nav")):
        source = book_relative(docs_dir / unquote(target.split("#")[0]), book)
        if source:
            titles.setdefault(source, plain(title))
    return titles


def _nav_entries(nav: object) -> Iterator[tuple[str, str]]:
    """(title, file) pairs of an MkDocs nav, sections flattened; an entry without a title names no page."""
    if isinstance(nav, list):
        for item in nav:
            yield from _nav_entries(item)
    elif isinstance(nav, dict):
        for title, target in nav.items():
            if isinstance(target, str):
                if "://" not in target:  # an external link names no page of the book
                    yield str(title), target
            else:
                yield from _nav_entries(target)


SYNTAX = Syntax(
    name="MkDocs",
    includes=_drop_includes,
    line_passes=(_unindent_admonitions,),
    markers=(_block_marker,),
    toc_titles=_nav_titles,
)
