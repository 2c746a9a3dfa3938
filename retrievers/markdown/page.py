"""The page model: a `Page` of heading-delimited `Section`s, its title, its module, and what a page's source is."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from retrievers.markdown.fences import fence_state, outside_fences
from retrievers.markdown.headings import HEADING, heading
from retrievers.markdown.urls import NUMBER_PREFIX

ROOT_MODULE = "general"


class BookFileError(Exception):
    """One page could not be read; the ingest reports it and goes on with the others."""

    def __init__(self, source: str, reason: str):
        super().__init__(f"{source}: {reason}")
        self.source, self.reason = source, reason


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    anchor: str
    text: str


@dataclass(frozen=True)
class Page:
    source: str  # path relative to the book folder, POSIX style
    title: str
    module: str
    url: str
    sections: tuple[Section, ...]


def page_title(front: dict, lines: list[str], toc_title: str | None, source: str) -> str:
    """Front matter, else the first H1, else the table of contents, else the first heading, else the file name. A
    blank one (`title: " "`) is none: citations would show a blank label."""
    headings = [m for m in map(HEADING.match, outside_fences(lines)) if m]
    first_h1 = next((heading(m.group(2))[0] for m in headings if len(m.group(1)) == 1), None)
    first_heading = heading(headings[0].group(2))[0] if headings else None
    candidates = (front.get("title"), front.get("sidebar_label"), first_h1, toc_title, first_heading)
    return next((str(c).strip() for c in candidates if c and str(c).strip()), _humanize(PurePosixPath(source).stem))


def split_sections(lines: list[str], title: str) -> list[Section]:
    """Sections by ATX headings (outside code fences); the heading path skips no text and tolerates skipped levels."""
    sections: list[Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, heading text, anchor)
    body: list[str] = []
    fence = None

    def flush():
        text = "\n".join(body).strip()
        if text:
            path = tuple(h for _, h, _ in stack)
            if not stack or (stack[0][0] != 1 and stack[0][1] != title):  # a title taken from it is not repeated
                path = (title,) + path
            sections.append(Section(path, stack[-1][2] if len(path) > 1 else "", text))
        body.clear()

    for line in lines:
        fence, in_code = fence_state(line, fence)
        match = None if in_code else HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, *heading(match.group(2))))
        else:
            body.append(line)
    flush()
    return sections


def module_of(source: str) -> str:
    parts = PurePosixPath(source).parts
    return NUMBER_PREFIX.sub("", parts[0]) if len(parts) > 1 else ROOT_MODULE


def book_relative(path: Path, book: Path) -> str | None:
    """A table-of-contents target as a page source (POSIX, relative to the book); None if it leaves the book."""
    relative = Path(os.path.relpath(path, book)).as_posix()  # lexical, as page sources are: links not followed
    return None if relative == "." or relative.split("/")[0] == ".." else relative


def _humanize(stem: str) -> str:
    return NUMBER_PREFIX.sub("", stem).replace("-", " ").replace("_", " ").strip().capitalize()
