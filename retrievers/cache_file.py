"""The on-disk cache of model outputs (BOOKRAG_DATA_DIR/embedding-cache.sqlite): one sqlite table per kind of output,
each value keyed by the model and the hashes of its inputs, so a repeated input costs no model call."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from bookrag.disk_space import MB, disk_full_is_an_error, require_free
from bookrag.errors import StoreError

# The room an ask or ingest needs beside the index: this cache's write-ahead log grows to 4 MB before sqlite folds
# it back, and DSPy's response cache (also under BOOKRAG_DATA_DIR by default) writes a few KB an answer.
CACHE_FLOOR_BYTES = 8 * MB


def digest(text: str) -> str:
    """The part of a key that stands for a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CacheFile:
    """One table of the cache file: a value per key. A subclass names its `table`, the value's `column` and its
    `column_type`, and says how a value is stored (`_encode`) and read back (`_decode`)."""

    table = column = column_type = ""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        with self._errors():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            require_free(self.path.parent, CACHE_FLOOR_BYTES)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT PRIMARY KEY, "
                             f"{self.column} {self.column_type} NOT NULL)")
            self._db.commit()

    @contextmanager
    def _errors(self):
        """A cache that cannot be read or written (a read-only folder, a damaged file, a full disk) is a StoreError
        naming it."""
        try:
            with disk_full_is_an_error(self.path.parent):
                yield
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"the embedding cache {self.path} cannot be used ({exc}): check that BOOKRAG_DATA_DIR "
                             "is a writable folder, or delete the file to start the cache afresh") from None

    def _encode(self, value):
        return value

    def _decode(self, stored):
        return stored

    def _usable(self, stored) -> bool:
        """Whether a stored value may be served; one that may not (cached before its kind of reply was checked) is
        computed again and replaced."""
        return True

    def _values(self, keys: list[str], inputs: list, compute: Callable[[list], list]) -> list:
        """The value of each key: read from the file, or computed from its input (`compute`, one call for all the
        missing ones) and written to it."""
        found = self._lookup(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            values = compute([inputs[i] for i in missing])
            self._store([(keys[i], value) for i, value in zip(missing, values)])
            found.update({keys[i]: value for i, value in zip(missing, values)})
        return [found[k] for k in keys]

    def _lookup(self, keys: list[str]) -> dict:
        found = {}
        with self._lock, self._errors():
            for start in range(0, len(keys), 500):
                batch = keys[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT key, {self.column} FROM {self.table} WHERE key IN ({marks})", batch)
                found.update({key: self._decode(stored) for key, stored in rows if self._usable(stored)})
        return found

    def _store(self, pairs: list[tuple[str, object]]) -> None:
        with self._lock, self._errors():
            self._db.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)",
                                 [(key, self._encode(value)) for key, value in pairs])
            self._db.commit()
