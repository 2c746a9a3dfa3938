"""Index a Markdown book into a Qdrant collection, incrementally.

The collection itself is the record of what is indexed: chunk ids are content hashes, so a run compares the
book's chunks with the ids in the store, embeds only the new ones, fixes changed metadata, and deletes what
the book no longer has. Upserts come before deletes, batch by batch, so a run killed at any moment leaves an
index the next run finishes without duplicates. Whether the last run finished is told by the store's ingest
record: removed before the first write, written after the last, so a killed run leaves none and readers can tell.

The record also names the book (its resolved path) and holds a snapshot of its files (`BookSnapshot`), taken
before the book is read: readers compare it with the folder to notice a book edited since, and an ingest refuses
a collection whose record names another book instead of deleting that book's chunks.

A page that cannot be read (not UTF-8, broken front matter, no permission) is gone from the book as far as the index
goes: its old chunks are deleted (answers from them would quote text the book may no longer hold), and it is left out
of the snapshot and named in the record's `unreadable`, so every later check finds the book changed, reads the page
again and says again why it is skipped, until it is fixed or removed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bookrag.config import Settings, book_name
from bookrag.errors import BadArgumentError, StoreError
from bookrag.progress import progress_bar
from retrievers.bm25 import Bm25Encoder
from retrievers.book_files import book_files
from retrievers.book_state import BookSnapshot
from retrievers.chunking import Chunk, chunk_page
from retrievers.embedder import Embedder
from retrievers.markdown import MARKDOWN_SUFFIXES, BookFileError, find_pages, parse_page, toc_titles
from retrievers.store import StoredPoint, VectorStore

log = logging.getLogger(__name__)
EMBED_BATCH = 64
MANY_FILES = 10_000  # more than most books hold: with no page at the top, the folder may not be the book


def collection_name(book_dir: Path, embedder: Embedder) -> str:
    """`<book>-<hash of its resolved path>__<embedder>`: two books in folders of the same name never share a
    collection, nor do vectors of different models. (A moved book gets a new one: re-indexed on first use.)"""
    path_hash = hashlib.sha256(str(Path(book_dir).resolve()).encode()).hexdigest()[:8]
    return f"{book_name(book_dir)}-{path_hash}__{embedder.name}"


def legacy_collection_name(book_dir: Path, embedder: Embedder) -> str:
    """The name before the path hash: shared by every book in a folder of this name, so never opened any more."""
    return f"{book_name(book_dir)}__{embedder.name}"


def check_same_book(collection: str, record: dict | None, book_dir: Path) -> None:
    """Refuse a collection whose ingest record names another book (a path-hash collision, or a data folder copied
    between machines): writing to it would delete that book's chunks, reading it would answer from its text."""
    indexed = (record or {}).get("book")
    if indexed and indexed != str(Path(book_dir).resolve()):
        raise StoreError(
            f"collection {collection!r} holds the book at {indexed}, not {Path(book_dir).resolve()}: set "
            "BOOKRAG_DATA_DIR to another folder for this book, or run `python ingest.py BOOK_DIR --recreate` to "
            "replace that index"
        )


def warn_if_not_a_book(book_dir: Path) -> None:
    """Before an ingest hashes and reads every file of the folder: a warning when it holds many files and no page at
    its top (a home folder, /tmp), so a wrong folder is noticed at once. A folder of more files than any book
    (`book_files.MAX_FILES`) is refused here."""
    files = book_files(book_dir).files
    if len(files) > MANY_FILES and not any("/" not in f.rel and f.rel.lower().endswith(MARKDOWN_SUFFIXES)
                                           for f in files):
        log.warning("%s holds %d files and no .md/.mdx page at its top: is it the book? Indexing reads every file; "
                    "if it is not, stop it (Ctrl-C) and pass the folder that holds the book's pages", book_dir,
                    len(files))


@dataclass
class IngestReport:
    files: int = 0
    chunks: int = 0
    embedded: int = 0
    skipped: int = 0  # chunks already indexed and unchanged
    updated: int = 0  # chunks whose metadata (title, url, ...) changed
    deleted: int = 0
    seconds: float = 0.0
    errors: list[BookFileError] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)  # unreadable page -> its passages deleted by this ingest

    def summary(self) -> str:
        bad = f", {len(self.errors)} file(s) skipped with errors" if self.errors else ""
        return (
            f"files {self.files}, chunks {self.chunks}, embedded {self.embedded}, skipped {self.skipped}, "
            f"deleted {self.deleted}{bad}, {self.seconds:.1f} s"
        )

    def skipped_lines(self, limit: int | None = None) -> list[str]:
        """`skipped <file>: <reason>` for each file skipped with errors; past `limit` of them, a line counting the
        rest."""
        lines = [f"skipped {error.source}: {error.reason}{self._removal(error.source)}"
                 for error in self.errors[:limit]]
        if limit is not None and len(self.errors) > limit:
            lines.append(f"... and {len(self.errors) - limit} more file(s) skipped with errors: `python ingest.py "
                         "BOOK_DIR` names them all")
        return lines

    def _removal(self, source: str) -> str:
        removed = self.removed.get(source)
        return f"; its {removed} passage(s) indexed before were removed from the index" if removed else ""


def read_book(book_dir: Path, settings: Settings) -> tuple[list[Chunk], list[BookFileError], int]:
    """(chunks, per-file errors, number of Markdown files). An unusable folder, or one whose pages hold no text to
    index, raises BadArgumentError."""
    book_dir = Path(book_dir)
    if book_dir.exists() and not book_dir.is_dir():
        raise BadArgumentError(f"{book_dir} is not a folder: pass the folder that holds the .md/.mdx files")
    if not book_dir.is_dir():
        raise BadArgumentError(f"book folder {book_dir} does not exist: pass the folder that holds the .md/.mdx files")
    paths = find_pages(book_dir)
    if not paths:
        raise BadArgumentError(f"no .md or .mdx files under {book_dir}: pass a Docusaurus docs/ folder or similar")
    chunks, errors = [], []
    toc = toc_titles(book_dir)
    for path in paths:
        try:
            page = parse_page(path, book_dir, settings.base_url, toc)
        except BookFileError as exc:
            errors.append(exc)
            continue
        chunks.extend(chunk_page(page, settings.chunk_tokens, settings.chunk_overlap))
    if not chunks:  # an index of nothing would answer every question with a refusal, and the ingest "succeed"
        raise BadArgumentError(_no_text(book_dir, len(paths), errors))
    return chunks, errors, len(paths)


def _no_text(book_dir: Path, n_files: int, errors: list[BookFileError]) -> str:
    unreadable = ", ".join(f"{e.source}: {e.reason}" for e in errors[:3]) + (", ..." if len(errors) > 3 else "")
    why = [f"{n_files - len(errors)} hold no text"] if n_files > len(errors) else []
    if errors:
        why.append(f"{len(errors)} could not be read ({unreadable})")
    return (f"no text to index in {book_dir}: of its {n_files} .md/.mdx file(s), {', '.join(why)}; add text to the "
            "pages, or pass the folder that holds the book")


class Indexer:
    def __init__(self, settings: Settings, embedder: Embedder, store: VectorStore):
        self.settings, self.embedder, self.store = settings, embedder, store
        self.sparse = Bm25Encoder()

    def ingest(self, book_dir: Path, recreate: bool = False, progress: bool | None = None) -> IngestReport:
        started = time.perf_counter()
        fresh = recreate or not self.store.exists()
        previous = {} if fresh else (self.store.ingest_record() or {})
        check_same_book(self.store.collection, previous, book_dir)
        warn_if_not_a_book(book_dir)
        snapshot = BookSnapshot.take(book_dir, previous.get("files"))  # before reading: a later edit shows next time
        chunks, errors, n_files = read_book(book_dir, self.settings)
        report = IngestReport(files=n_files - len(errors), chunks=len(chunks), errors=errors)
        if fresh:  # before the drop: a refused ingest leaves the old index as it was
            self._check_space(chunks)
        if recreate and self.store.exists():
            self.store.drop()
        if not self.store.exists():
            self.store.create(self.embedder.dim)
        elif (dim := self.store.dimension()) not in (0, self.embedder.dim):
            raise StoreError(
                f"collection {self.store.collection!r} holds {dim}-d vectors but {self.embedder.model_id} makes "
                f"{self.embedder.dim}-d ones: run `python ingest.py BOOK_DIR --recreate`"
            )

        indexed = {hit.id: hit.payload for hit in self.store.scan()}
        new = [c for c in chunks if c.id not in indexed]
        changed = {c.id: c.payload() for c in chunks if c.id in indexed and indexed[c.id] != c.payload()}
        report.skipped = len(chunks) - len(new) - len(changed)
        current = {c.id for c in chunks}
        stale = [i for i in indexed if i not in current]  # an unreadable page's too: its text is no longer known
        unreadable = sorted({e.source for e in errors})
        removed = Counter(indexed[i].get("source") for i in stale)
        report.removed = {source: removed[source] for source in unreadable if removed[source]}
        if (new or changed) and not fresh:
            self._check_space(new + [c for c in chunks if c.id in changed])
        if new or changed or stale:
            self.store.set_ingest_record(None)  # from here until the end, the collection is not the book

        with progress_bar("Embedding", len(new), progress) as bar:
            for start in range(0, len(new), EMBED_BATCH):
                batch = new[start : start + EMBED_BATCH]
                self.store.upsert(self._points(batch))
                report.embedded += len(batch)
                bar.advance(len(batch))
        self.store.set_payloads(changed)
        report.updated = len(changed)
        self.store.delete(stale)
        report.deleted = len(stale)
        self.store.flush()
        record = {"points": self.store.count(), "book": str(Path(book_dir).resolve()),
                  "files": snapshot.without(unreadable).record(), "unreadable": unreadable}
        self.store.set_ingest_record(record)  # last: the ingest completed
        report.seconds = time.perf_counter() - started
        log.info("ingest %s into %s: %s", book_dir, self.store.collection, report.summary())
        return report

    def _check_space(self, chunks: list[Chunk]) -> None:
        self.store.check_space(len(chunks), sum(len(c.text.encode()) for c in chunks), self.embedder.dim)

    def _points(self, chunks: list[Chunk]) -> list[StoredPoint]:
        texts = [c.embedding_text for c in chunks]
        dense = self.embedder.embed_documents(texts)
        return [
            StoredPoint(c.id, vec, self.sparse.document(text), c.payload())
            for c, vec, text in zip(chunks, dense, texts)
        ]
