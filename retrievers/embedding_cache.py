"""Embeddings cached on disk by (model, input kind, text hash): re-ingests and repeated queries skip the model."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from bookrag.disk_space import MB, disk_full_is_an_error, require_free
from bookrag.errors import StoreError
from retrievers.embedder import Embedder

# The room an ask or ingest needs beside the index: this cache's write-ahead log grows to 4 MB before sqlite folds
# it back, and DSPy's response cache (also under BOOKRAG_DATA_DIR by default) writes a few KB an answer.
CACHE_FLOOR_BYTES = 8 * MB


class CachedEmbedder:
    def __init__(self, inner: Embedder, path: Path):
        self.inner = inner
        self.name, self.model_id, self.dim = inner.name, inner.model_id, inner.dim
        self.path = Path(path)
        self._lock = threading.Lock()
        with self._errors():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            require_free(self.path.parent, CACHE_FLOOR_BYTES)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
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

    def _key(self, kind: str, text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return f"{self.model_id}|{kind}|{digest}"

    def _lookup(self, keys: list[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        with self._lock, self._errors():
            for start in range(0, len(keys), 500):
                batch = keys[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch)
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
        return found

    def _store(self, pairs: list[tuple[str, list[float]]]) -> None:
        with self._lock, self._errors():
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(key, np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in pairs],
            )
            self._db.commit()

    def _embed(self, kind: str, texts: list[str], compute) -> list[list[float]]:
        keys = [self._key(kind, t) for t in texts]
        found = self._lookup(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = compute([texts[i] for i in missing])
            self._store([(keys[i], vec) for i, vec in zip(missing, vectors)])
            found.update({keys[i]: vec for i, vec in zip(missing, vectors)})
        return [found[k] for k in keys]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed("document", texts, self.inner.embed_documents)

    def embed_query(self, text: str) -> list[float]:
        return self._embed("query", [text], lambda ts: [self.inner.embed_query(ts[0])])[0]
