"""Which files of a book folder bookrag lists, stats and reads: `book_files` walks the folder, `open_book_file`
opens one of its files.

A book is text, so only regular files count: a named pipe blocks a read until something writes to it, and a device
(`/dev/zero`) never ends. A link counts only when its target lies inside the book folder, checked before anything
stats or reads it: the index, and the answers quoting it, hold only the book. Hidden folders and node_modules hold
no pages and are not walked; links to folders are not followed. A folder of more than `MAX_FILES` files is not a
book (`ingest.py /`): the walk stops there with an error, before anything is hashed or read.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from bookrag.errors import BadArgumentError

MAX_FILES = 100_000  # a large documentation site has a few thousand files; listing 100,000 takes about a second
_SKIPPED_DIRS = ("node_modules",)


class BookFile(NamedTuple):
    rel: str  # the path under the book folder, POSIX style
    path: str
    stat: os.stat_result  # of the link's target, for a link


@dataclass
class BookFiles:
    files: list[BookFile] = field(default_factory=list)  # sorted by path
    skipped: dict[str, str] = field(default_factory=dict)  # path under the book folder -> why it is not read


def book_files(book_dir: Path) -> BookFiles:
    """The regular files under the book folder (links to them inside it followed), and why each other file is
    skipped. More than `MAX_FILES` files is a BadArgumentError."""
    root = os.path.realpath(book_dir)
    found = BookFiles()
    for rel, entry in _entries(book_dir):  # listed first: a folder too large is refused before any stat
        why = _why_not_read(entry, root)
        if why:
            found.skipped[rel] = why
        else:
            found.files.append(BookFile(rel, entry.path, entry.stat()))
    found.files.sort(key=lambda file: file.rel.split("/"))
    return found


def open_book_file(path: Path) -> BinaryIO:
    """`path` open for reading bytes, or OSError when it is not a regular file. Opened without blocking, so a named
    pipe put in the place of a file since the walk is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, _not_regular(mode), str(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _entries(book_dir: Path) -> list[tuple[str, os.DirEntry]]:
    """(path under the folder, DirEntry) of every entry that is not a folder, hidden ones and node_modules left out;
    BadArgumentError past `MAX_FILES` of them."""
    folders, found = [(os.fspath(book_dir), "")], []
    while folders:
        folder, prefix = folders.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:  # an unreadable (or vanished) folder: nothing in it can be read either
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if not entry.is_dir(follow_symlinks=False):
                found.append((prefix + entry.name, entry))
            elif entry.name not in _SKIPPED_DIRS:
                folders.append((entry.path, f"{prefix}{entry.name}/"))
        if len(found) > MAX_FILES:
            raise BadArgumentError(
                f"{book_dir} holds more than {MAX_FILES:,} files, more than any book: pass the folder that holds the "
                "book's .md/.mdx pages (a Docusaurus or MkDocs docs/ folder, an mdBook src/ folder)")
    return found


def _why_not_read(entry: os.DirEntry, root: str) -> str | None:
    if entry.is_symlink():
        target = os.path.realpath(entry.path)
        if os.path.commonpath((root, target)) != root:
            return f"it links to {target}, outside the book folder"
    try:
        mode = entry.stat().st_mode
    except OSError as exc:  # a link to no file, or a loop of links
        return f"cannot be read ({exc.strerror})"
    return None if stat.S_ISREG(mode) else _not_regular(mode)


def _not_regular(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a link to a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "a device")
    return f"{kind}, not a regular file"
