"""`BookSnapshot`: what a book folder held when it was indexed (each file's size, mtime and content hash), and
which files changed since.

Every file under the folder counts, not only the pages: a table of contents (SUMMARY.md), an included code
listing or MkDocs' config (also read from the folder's parent) changes the chunks as much as a page does. A
file that is not part of the text (an image) only costs a no-op incremental ingest when it changes.

Checking is cheap: a walk with one stat per file; only files whose size or mtime moved are hashed, so touching a
file without changing it is not a change.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from retrievers.markdown import MKDOCS_CONFIGS

_SKIPPED_DIRS = ("node_modules",)  # as find_pages: hidden folders and node_modules hold no pages
_PARENT = "../"  # key prefix of a file read from the book folder's parent (MkDocs' config)


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    sha256: str

    def as_list(self) -> list:
        return [self.size, self.mtime_ns, self.sha256]

    def same_stat(self, stat: os.stat_result) -> bool:
        return (self.size, self.mtime_ns) == (stat.st_size, stat.st_mtime_ns)

    def differs(self, path: Path, stat: os.stat_result) -> bool:
        """Whether the file's content changed: hashed only when its size is the same but its mtime moved."""
        return not self.same_stat(stat) and (self.size != stat.st_size or _sha256(path) != self.sha256)


@dataclass(frozen=True)
class BookSnapshot:
    files: dict[str, FileState]

    @classmethod
    def take(cls, book_dir: Path, previous: dict | None = None) -> BookSnapshot:
        """The folder now; files whose size and mtime match `previous` (a recorded snapshot) keep its hash."""
        known = _parse(previous)
        files = {}
        for key, path, stat in _stat_files(Path(book_dir)):
            old = known.get(key)
            same = old is not None and old.same_stat(stat)
            files[key] = FileState(stat.st_size, stat.st_mtime_ns, old.sha256 if same else _sha256(path))
        return cls(files)

    def record(self) -> dict[str, list]:
        """The JSON form kept in the store's ingest record."""
        return {key: state.as_list() for key, state in sorted(self.files.items())}

    @staticmethod
    def changed_files(book_dir: Path, recorded: dict | None) -> list[str]:
        """The files added, removed or edited since `recorded` was taken (a touched but unchanged file is not)."""
        known = _parse(recorded)
        seen, changed = set(), []
        for key, path, stat in _stat_files(Path(book_dir)):
            seen.add(key)
            old = known.get(key)
            if old is None or old.differs(path, stat):
                changed.append(key)
        return sorted([*changed, *(key for key in known if key not in seen)])


def _parse(recorded: dict | None) -> dict[str, FileState]:
    return {key: FileState(*value) for key, value in (recorded or {}).items()}


def _stat_files(book_dir: Path):
    """(key, path, stat) of every regular file under the folder, links followed, plus MkDocs' config beside it."""
    for root, dirs, names in os.walk(book_dir, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        rel = Path(root).relative_to(book_dir)
        for name in names:
            if name.startswith("."):
                continue
            path = Path(root, name)
            try:
                stat = path.stat()
            except OSError:  # a dangling link: nothing the ingest can read either
                continue
            yield (rel / name).as_posix(), path, stat
    for name in MKDOCS_CONFIGS:
        path = book_dir.parent / name
        if path.is_file():
            yield _PARENT + name, path, path.stat()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:  # unreadable now: recorded as such, so it counts as changed once it becomes readable
        return ""
    return digest.hexdigest()
