"""mdBook's syntax: `SUMMARY.md` (the table of contents, titling pages), the `{{#include}}` family of directives,
and the `# `-prefixed lines it hides in Rust code blocks."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from urllib.parse import unquote

from retrievers.markdown.fences import FENCE, fence_state, outside_fences
from retrievers.markdown.inline import plain
from retrievers.markdown.page import book_relative
from retrievers.markdown.syntax import Syntax

log = logging.getLogger(__package__)
SUMMARY_FILE = "SUMMARY.md"  # mdBook's table of contents, at the book root: it titles pages and is not one
MAX_INCLUDE_DEPTH = 10  # mdBook's own limit on includes within included files

_DIRECTIVE = re.compile(r"(\\)?\{\{\s*#(\w+)\s*(.*?)\s*\}\}")
_ANCHOR_LINE = re.compile(r"ANCHOR(?:_END)?:\s*[\w-]+")
_LINE_RANGE = re.compile(r"(\d*)(?::(\d*))?")
_SUMMARY_ENTRY = re.compile(r"^\s*(?:[-*+]\s+)?\[(.+)\]\(<?([^()<>]*?)>?\)\s*$")


def _expand_directives(text: str, page_dir: Path, book_root: Path, depth: int = 0) -> str:
    """mdBook's `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}` replaced by the file they name when
    it lies inside the book folder (paths are relative to the page; line ranges and anchors honoured); any other
    `{{#...}}` directive, or one naming a file outside the book, is dropped. `\\{{#...}}` is literal text."""

    def replace(directive: re.Match) -> str:
        escaped, name, args = directive.groups()
        if escaped:
            return directive.group(0)[1:]
        if name not in ("include", "rustdoc_include", "playground") or not args or depth >= MAX_INCLUDE_DEPTH:
            return ""
        target, _, selector = args.split()[0].partition(":")
        included = _read_inside_book(page_dir / target, book_root)
        if included is None:
            log.debug("dropped {{#%s %s}}: no such file inside the book folder", name, args)
            return ""
        included = _expand_directives(
            _select_lines(included, selector), (page_dir / target).parent, book_root, depth + 1
        )
        return f"```rust\n{included}\n```" if name == "playground" else included

    return _DIRECTIVE.sub(replace, text)


def _read_inside_book(path: Path, book_root: Path) -> str | None:
    """A file's text when it (links followed) lies inside the book folder; None when outside, missing or not UTF-8."""
    resolved = path.resolve()
    if not resolved.is_relative_to(book_root) or not resolved.is_file():
        return None
    try:
        return resolved.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _select_lines(text: str, selector: str) -> str:
    """mdBook's part of a file: `2` (one line), `2:10`, `2:`, `:10` (1-based, inclusive) or an anchor name.

    Lines holding `ANCHOR:`/`ANCHOR_END:` markers never show, as in mdBook.
    """
    lines = text.rstrip("\n").split("\n")
    numbers = _LINE_RANGE.fullmatch(selector)
    if not selector:
        chosen = lines
    elif numbers:
        start, end = numbers.groups()
        first = int(start) - 1 if start else 0
        last = first + 1 if end is None else int(end) if end else len(lines)
        chosen = lines[max(first, 0) : last]
    else:
        chosen = _anchored_lines(lines, selector)
    return "\n".join(line for line in chosen if not _ANCHOR_LINE.search(line))


def _anchored_lines(lines: list[str], anchor: str) -> list[str]:
    """The lines between `ANCHOR: name` and `ANCHOR_END: name` (markers may sit in any kind of comment)."""
    name = re.escape(anchor) + r"(?![\w-])"
    start, end = re.compile(r"ANCHOR:\s*" + name), re.compile(r"ANCHOR_END:\s*" + name)
    chosen: list[str] | None = None
    for line in lines:
        if chosen is None:
            chosen = [] if start.search(line) else None
        elif end.search(line):
            break
        else:
            chosen.append(line)
    return chosen or []


def _drop_hidden_rust_lines(lines: list[str]) -> list[str]:
    """mdBook hides a Rust code block's `# `-prefixed lines (the `fn main() {` around an example) from its reader;
    they go here too. `##` stands for a `#` the reader sees; `#[derive]` and `#![allow]` are attributes, shown."""
    out: list[str] = []
    fence, rust = None, False
    for line in lines:
        opening = fence is None
        fence, in_code = fence_state(line, fence)
        if in_code and opening:
            rust = FENCE.match(line).group(2).lower() == "rust"
        elif in_code and rust and fence is not None:
            code = line.lstrip()
            if code == "#" or code.startswith("# "):
                continue
            if code.startswith("##"):
                line = line.replace("##", "#", 1)
        out.append(line)
    return out


def _summary_titles(book: Path) -> dict[str, str]:
    """mdBook's `SUMMARY.md`: `- [Title](path.md)` entries, nested, and prefix chapters without a bullet."""
    path = book / SUMMARY_FILE
    if not path.is_file():
        return {}
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("ignored %s for page titles: %s", SUMMARY_FILE, exc)
        return {}
    titles: dict[str, str] = {}
    for entry in filter(None, map(_SUMMARY_ENTRY.match, outside_fences(lines))):
        source = book_relative(book / unquote(entry.group(2).split("#")[0]), book) if entry.group(2) else None
        if source:
            titles.setdefault(source, plain(entry.group(1)))
    return titles


SYNTAX = Syntax(
    name="mdBook",
    includes=_expand_directives,
    line_passes=(_drop_hidden_rust_lines,),
    toc_titles=_summary_titles,
    root_files=(SUMMARY_FILE,),
)
