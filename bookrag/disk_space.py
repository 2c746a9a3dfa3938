"""Free disk space: checked before the writes a full disk turns into a crash, and a full disk named in one line.

The embedded Qdrant engine writes its segments through mmap: on a full disk such a write is not an error the
engine can return but a SIGBUS that kills the process ("Bus error", exit 135). So space is checked before the
engine writes, and the ordinary writes (sqlite, files) that fail with ENOSPC say so in the same words.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bookrag.config import nearest_existing
from bookrag.errors import StoreError

MB = 1024 * 1024
MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})


def free_bytes(path: Path) -> int:
    """Free space for an unprivileged writer on the file system that holds `path` (or would: its nearest folder)."""
    return shutil.disk_usage(nearest_existing(path)).free


def in_memory(path: Path) -> bool:
    """Whether `path` lies on a file system kept in memory (tmpfs, ramfs), where even reading a hole of a mapped
    file allocates it. Where the mount table cannot be read (not Linux), assume so: the cautious answer."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return True
    target, longest, kind = nearest_existing(path).resolve(), "", ""
    for line in mounts:  # "id parent dev root MOUNT_POINT options ... - FSTYPE source options"
        fields = line.split()
        mount_point = fields[4].encode().decode("unicode_escape")  # the table writes a space as \040
        if target.is_relative_to(mount_point) and len(mount_point) >= len(longest):  # the last mount on top wins
            longest, kind = mount_point, fields[fields.index("-") + 1]
    return kind in MEMORY_FILE_SYSTEMS


def no_space_error(path: Path, needed: int | None = None) -> StoreError:
    need = f", {_size(needed)} needed" if needed else ""
    return StoreError(f"no space left on {path} ({_size(free_bytes(path))} free{need}): free some space there, or set "
                      "BOOKRAG_DATA_DIR to a folder on a larger disk")


def require_free(path: Path, needed: int) -> None:
    """A StoreError (exit 3) naming `path` unless its file system has `needed` bytes free."""
    if free_bytes(path) < needed:
        raise no_space_error(path, needed)


@contextmanager
def disk_full_is_an_error(path: Path) -> Iterator[None]:
    """An OSError ENOSPC, or sqlite's "database or disk is full", inside the block becomes `no_space_error(path)`."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise no_space_error(path) from None
        raise
    except sqlite3.Error as exc:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code of an extended one
        if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR and free_bytes(path) == 0):
            raise no_space_error(path) from None
        raise


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB / 10 else f"{n:,} bytes"
