"""The embedded default: Qdrant's own engine in-process (`qdrant-edge-py`), one shard folder per collection.

Crash safety comes from the engine's write-ahead log; a shard is created in a temporary folder and renamed into
place, so a kill during creation never leaves a half-made shard. One process at a time: a lock file turns the
engine's second-opener failure into a clear message.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import qdrant_edge as qe

from bookrag.errors import StoreError
from retrievers.store import DENSE, INDEXED_FIELDS, RRF_K, SPARSE, Hit, StoredPoint, StoreQuery

_SCAN_PAGE = 512


class EdgeStore:
    def __init__(self, root: Path, collection: str):
        self.root = Path(root)
        self.collection = collection
        self.path = self.root / collection
        self._shard: qe.EdgeShard | None = None
        self._lock_file = None

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _lock(self) -> None:
        if self._lock_file is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        handle = open(self.root / f"{self.collection}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise StoreError(
                f"the index {self.path} is open in another bookrag process (pid {holder}); "
                "wait for it to finish or close it, or set BOOKRAG_DATA_DIR to another folder"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock_file = handle

    @property
    def shard(self) -> qe.EdgeShard:
        if self._shard is None:
            self._lock()
            if not self.exists():
                raise StoreError(f"collection {self.collection!r} does not exist yet: run `python ingest.py BOOK_DIR`")
            try:
                self._shard = qe.EdgeShard.load(str(self.path))
            except Exception as exc:  # noqa: BLE001 - the engine raises plain exceptions
                raise StoreError(
                    f"cannot open the index at {self.path} ({exc}); rebuild it with `python ingest.py BOOK_DIR --recreate`"
                ) from None
        return self._shard

    def exists(self) -> bool:
        return self.path.is_dir()

    def create(self, dim: int) -> None:
        self._lock()
        staging = self.root / f".{self.collection}.creating-{uuid.uuid4().hex[:8]}"
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        shard = qe.EdgeShard.create(str(staging), config)
        for name in INDEXED_FIELDS:
            shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
        shard.flush()
        shard.close()
        os.replace(staging, self.path)  # atomic: the collection exists whole or not at all

    def dimension(self) -> int:
        sample = self.shard.scroll(qe.ScrollRequest(limit=1, with_vector=[DENSE]))[0]
        if not sample:
            return 0
        return len(sample[0].vector[DENSE])

    def drop(self) -> None:
        self.close()
        self._lock()
        if self.exists():
            trash = self.root / f".{self.collection}.dropping-{uuid.uuid4().hex[:8]}"
            os.replace(self.path, trash)
            shutil.rmtree(trash, ignore_errors=True)

    def flush(self) -> None:
        if self._shard is not None:
            self._shard.flush()

    def close(self) -> None:
        if self._shard is not None:
            self._shard.flush()
            self._shard.close()
            self._shard = None
        if self._lock_file is not None:
            self._lock_file.close()  # releases the flock
            self._lock_file = None

    # -- writes ------------------------------------------------------------------------------------------
    def upsert(self, points: list[StoredPoint]) -> None:
        if points:
            self.shard.update(
                qe.UpdateOperation.upsert_points(
                    [
                        qe.Point(
                            p.id,
                            {DENSE: p.dense, SPARSE: qe.SparseVector(p.sparse.indices, p.sparse.values)},
                            p.payload,
                        )
                        for p in points
                    ]
                )
            )

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def set_payloads(self, payloads: dict[str, dict]) -> None:
        for point_id, payload in payloads.items():
            self.shard.update(qe.UpdateOperation.overwrite_payload([point_id], payload))

    # -- reads -------------------------------------------------------------------------------------------
    def scan(self) -> Iterator[Hit]:
        offset = None
        while True:
            records, offset = self.shard.scroll(qe.ScrollRequest(offset=offset, limit=_SCAN_PAGE, with_payload=True))
            for record in records:
                yield Hit(str(record.id), 0.0, record.payload or {})
            if offset is None:
                return

    def count(self) -> int:
        return self.shard.count(qe.CountRequest(exact=True))

    def query_batch(self, queries: list[StoreQuery]) -> list[list[Hit]]:
        results = self.shard.query_batch(qe.QueryBatchRequest([self._request(q) for q in queries]))
        return [[Hit(str(p.id), p.score, p.payload or {}) for p in points] for points in results]

    def _request(self, q: StoreQuery) -> qe.QueryRequest:
        exact = qe.SearchParams(exact=True)  # exact search: the engine's HNSW recall is poor on small sets
        where = qe.Filter(must=[qe.FieldCondition(key="module", match=qe.MatchValue(q.module))]) if q.module else None
        dense = qe.Query.Nearest(q.dense, using=DENSE) if q.dense is not None else None
        sparse = qe.Query.Nearest(qe.SparseVector(q.sparse.indices, q.sparse.values), using=SPARSE) if q.sparse else None
        if q.mode == "hybrid":
            stage = dict(
                query=qe.Fusion.Rrf(k=RRF_K),
                prefetches=[
                    qe.Prefetch(limit=q.candidates, query=dense, params=exact, filter=where),
                    qe.Prefetch(limit=q.candidates, query=sparse, filter=where),
                ],
            )
        else:
            stage = dict(query=dense if q.mode == "dense" else sparse, filter=where, params=exact)
        if q.mmr:  # diversify the stage's candidates by dense similarity
            pool = qe.Prefetch(limit=q.candidates, **stage)
            mmr = qe.Mmr(q.dense, lambda_=0.5, candidates_limit=q.candidates, using=DENSE)
            stage = dict(query=mmr, prefetches=[pool], params=exact)
        return qe.QueryRequest(limit=q.limit, with_payload=True, **stage)
