"""`BookSnapshot`: what a book folder held when it was indexed (each file's size, mtime, ctime and content hash),
and which files changed since.

Every file of the book counts (`book_files`: regular files inside the folder), not only the pages: a table of
contents (SUMMARY.md), an included code listing or MkDocs' config (also read from the folder's parent) changes the
chunks as much as a page does. A file that is not part of the text (an image) only costs a no-op incremental
ingest when it changes.

Checking is cheap: a walk with one stat per file; only files whose size, mtime or ctime moved are hashed, so
touching a file without changing it is not a change. The ctime (inode change time) catches an edit that kept the
size and put the mtime back (`touch -r`): a program cannot set it back. A record written before ctimes were kept has
none: each file is hashed once, and the refreshed stats are recorded (`BookIndex.ingest_state`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from retrievers.book_files import book_files, open_book_file
from retrievers.markdown import MKDOCS_CONFIGS

_PARENT = "../"  # key prefix of a file read from the book folder's parent (MkDocs' config)


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    sha256: str
    ctime_ns: int | None = None  # None in a record written before ctimes were kept

    def as_list(self) -> list:
        return [self.size, self.mtime_ns, self.sha256, self.ctime_ns]

    def same_stat(self, now: os.stat_result) -> bool:
        return (self.size, self.mtime_ns, self.ctime_ns) == (now.st_size, now.st_mtime_ns, now.st_ctime_ns)


@dataclass(frozen=True)
class BookSnapshot:
    files: dict[str, FileState]

    @classmethod
    def take(cls, book_dir: Path, previous: dict | None = None) -> BookSnapshot:
        """The folder now; files whose stat matches `previous` (a recorded snapshot) keep its hash."""
        known = _parse(previous)
        files = {}
        for key, path, now in _stat_files(Path(book_dir)):
            old = known.get(key)
            sha256 = old.sha256 if old is not None and old.same_stat(now) else _sha256(path)
            files[key] = FileState(now.st_size, now.st_mtime_ns, sha256, now.st_ctime_ns)
        return cls(files)

    def without(self, keys: list[str]) -> BookSnapshot:
        """This snapshot as if `keys` were not there: the next check finds them added."""
        return BookSnapshot({key: state for key, state in self.files.items() if key not in keys})

    def record(self) -> dict[str, list]:
        """The JSON form kept in the store's ingest record."""
        return {key: state.as_list() for key, state in sorted(self.files.items())}

    def changed_since(self, recorded: dict | None) -> list[str]:
        """The files added, removed or edited since `recorded` was taken (a touched but unchanged file is not)."""
        known = _parse(recorded)
        return sorted(key for key in self.files.keys() | known.keys()
                      if key not in self.files or key not in known or self.files[key].sha256 != known[key].sha256)


def _parse(recorded: dict | None) -> dict[str, FileState]:
    return {key: FileState(*value) for key, value in (recorded or {}).items()}


def _stat_files(book_dir: Path):
    """(key, path, stat) of every file of the book, plus MkDocs' config beside it."""
    for file in book_files(book_dir).files:
        yield file.rel, file.path, file.stat
    for name in MKDOCS_CONFIGS:
        path = book_dir.parent / name
        try:
            config = path.stat()
        except OSError:  # none there
            continue
        if stat.S_ISREG(config.st_mode):
            yield _PARENT + name, path, config


def _sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    try:
        with open_book_file(path) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:  # unreadable now: recorded as such, so it counts as changed once it becomes readable
        return ""
    return digest.hexdigest()
