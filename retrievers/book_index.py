"""`BookIndex`: one book's collection with its embedder and store; what the CLIs and programs open."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Self

from bookrag.config import Settings
from retrievers.backends import make_embedder, make_reranker, open_store
from retrievers.book_state import BookSnapshot
from retrievers.embedder import Embedder
from retrievers.indexer import Indexer, IngestReport, check_same_book, collection_name, legacy_collection_name
from retrievers.reranker import Reranker
from retrievers.retriever import QdrantRetriever, Retriever
from retrievers.store import VectorStore

log = logging.getLogger(__name__)
SKIPPED_NAMED = 3  # files skipped with errors named after an ingest that ask, evaluate or optimize runs


class BookIndex:
    def __init__(self, settings: Settings, book_dir: Path | None = None, embedder: Embedder | None = None,
                 store: VectorStore | None = None, reranker: Reranker | None = None):
        self.settings = settings
        self.book_dir = Path(book_dir or settings.book_dir)
        self.embedder = embedder or make_embedder(settings)
        self.reranker = reranker or make_reranker(settings)  # None: searches are not reranked
        self.collection = collection_name(self.book_dir, self.embedder)
        self.store = store or open_store(settings, self.collection)
        self._retriever: QdrantRetriever | None = None

    def __deepcopy__(self, memo):
        """Shared, not copied: DSPy optimizers deep-copy programs, and an open store is not program state."""
        return self

    def ingest(self, recreate: bool = False, progress: bool | None = None) -> IngestReport:
        if not self.store.exists():
            self._mention_legacy_collection()
        return Indexer(self.settings, self.embedder, self.store).ingest(self.book_dir, recreate, progress)

    def ingest_state(self) -> str:
        """`missing` (no collection, or an empty one), `incomplete` (its last ingest did not finish: the points
        are part old book, part new, and answers from them can be silently wrong), `changed` (complete, but the
        book's files changed since: answers would come from the old text) or `complete`.
        A collection holding another book is a StoreError."""
        points = self.store.count() if self.store.exists() else 0
        if not points:
            return "missing"
        record = self.store.ingest_record()
        if record is None or record.get("points") != points:
            return "incomplete"
        check_same_book(self.collection, record, self.book_dir)
        now = BookSnapshot.take(self.book_dir, record.get("files"))
        if now.changed_since(record.get("files")):
            return "changed"
        if now.record() != record.get("files"):  # touched files, or a record without ctimes: hashed once, not again
            self.store.set_ingest_record({**record, "files": now.record()})
        return "complete"

    def update(self, announce, progress: bool | None = None, state: str | None = None, *,
               reread: bool = False) -> IngestReport | None:
        """Ingest (incrementally) when the book's collection is missing, its last ingest did not finish, or the book
        changed since it was indexed, saying why first with `announce`; nothing when the index is the book.
        `reread`: ingest anyway (evaluate and optimize re-read the book every run, which also applies changed
        chunking settings), saying why only when the book changed. Either way the files skipped with errors are
        named after the ingest. Returns the ingest's report, or None when nothing was read."""
        state = state or self.ingest_state()
        if state == "complete" and not reread:
            return None
        if state == "changed":
            announce(self._change_notice())
        elif state == "missing":
            announce(f"Indexing {self.book_dir} into {self.collection} (first run) ...")
        elif state == "incomplete":
            announce(f"Finishing the ingest of {self.book_dir} into {self.collection}: the last one did not "
                     "complete ...")
        report = self.ingest(progress=progress)
        if state != "complete":
            announce(f"Indexed: {report.summary()}")
        for line in report.skipped_lines(limit=SKIPPED_NAMED):
            announce(line)
        return report

    def changed_files(self, record: dict | None = None) -> list[str]:
        """The book's files added, removed or edited since its last complete ingest (all of them if none)."""
        record = record if record is not None else (self.store.ingest_record() or {})
        return BookSnapshot.take(self.book_dir, record.get("files")).changed_since(record.get("files"))

    def _change_notice(self) -> str:
        """What changed: files edited since the last ingest, or only the pages it could not read (`Indexer`), which
        every refresh reads again."""
        record = self.store.ingest_record() or {}
        changed = self.changed_files(record)
        names = ", ".join(changed[:3]) + (", ..." if len(changed) > 3 else "")
        if set(changed) <= set(record.get("unreadable", ())):
            return f"Reading again the {len(changed)} page(s) the last ingest could not read ({names}) ..."
        return f"The book changed since it was indexed ({len(changed)} file(s): {names}): updating the index ..."

    def _mention_legacy_collection(self) -> None:
        """Indexes made before collections were named by book path are not reused (the name was shared by every
        book in a folder of that name, so its points may be another book's): say that one is left behind."""
        legacy = open_store(self.settings, legacy_collection_name(self.book_dir, self.embedder))
        try:
            if legacy.exists():
                where = (f"delete {self.settings.store_dir / legacy.collection}" if self.settings.store_kind ==
                         "embedded" else f"drop the collection {legacy.collection} on the Qdrant server")
                log.warning("indexing %s into %s; the index %s made by an earlier bookrag is no longer used: %s to "
                            "free its space once no older bookrag needs it", self.book_dir, self.collection,
                            legacy.collection, where)
        finally:
            legacy.close()

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = QdrantRetriever(self.store, self.embedder, reranker=self.reranker)
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
