"""`BookIndex`: one book's collection with its embedder and store; what the CLIs and programs open."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Self

from bookrag.config import Settings
from retrievers.embedder import Embedder, make_embedder
from retrievers.indexer import Indexer, IngestReport, collection_name
from retrievers.retriever import QdrantRetriever
from retrievers.store import VectorStore, open_store


class BookIndex:
    def __init__(self, settings: Settings, book_dir: Path | None = None, embedder: Embedder | None = None,
                 store: VectorStore | None = None):
        self.settings = settings
        self.book_dir = Path(book_dir or settings.book_dir)
        self.embedder = embedder or make_embedder(settings)
        self.collection = collection_name(self.book_dir, self.embedder)
        self.store = store or open_store(settings, self.collection)
        self._retriever: QdrantRetriever | None = None

    def __deepcopy__(self, memo):
        """Shared, not copied: DSPy optimizers deep-copy programs, and an open store is not program state."""
        return self

    def ingest(self, recreate: bool = False, progress: bool | None = None) -> IngestReport:
        return Indexer(self.settings, self.embedder, self.store).ingest(self.book_dir, recreate, progress)

    def ingest_state(self) -> str:
        """`missing` (no collection, or an empty one), `incomplete` (its last ingest did not finish: the points
        are part old book, part new, and answers from them can be silently wrong) or `complete`."""
        points = self.store.count() if self.store.exists() else 0
        if not points:
            return "missing"
        record = self.store.ingest_record()
        return "complete" if record is not None and record.get("points") == points else "incomplete"

    @property
    def retriever(self) -> QdrantRetriever:
        if self._retriever is None:
            self._retriever = QdrantRetriever(self.store, self.embedder)
        return self._retriever

    def fingerprint(self) -> str:
        """A hash of the indexed chunk ids: equal fingerprints mean the same indexed text."""
        ids = sorted(hit.id for hit in self.store.scan())
        return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
