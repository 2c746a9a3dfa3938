"""The embedded default: Qdrant's own engine in-process (`qdrant-edge-py`), one shard folder per collection.

Crash safety comes from the engine's write-ahead log; a shard is created in a temporary folder and renamed into
place, so a kill during creation never leaves a half-made shard. One process at a time: a lock file turns the
engine's second-opener failure into a clear message. Within a process, every EdgeStore on the same folder shares
one open shard (a notebook that loads a program twice must not lock itself out). The ingest record sits next to
the shard, as `<collection>.ingest.json`.

The engine writes its files through mmap, so a full disk kills the process with SIGBUS instead of raising: space
is checked before it writes (`check_space`, from the ingest's size) and before it loads a shard on tmpfs (where
loading fills the sparse vector file), and a full disk is a StoreError naming the folder (exit 3).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import qdrant_edge as qe

from bookrag.disk_space import MB, disk_full_is_an_error, in_memory, require_free
from bookrag.errors import StoreError
from retrievers.store import DENSE, INDEXED_FIELDS, RRF_K, SPARSE, Hit, StoredPoint, StoreQuery

_SCAN_PAGE = 512
# What the engine takes on disk, measured with the bundled book (158 points, 384-d): a fresh collection holds 1.3 MB
# on ext4, where its preallocated files (179 MB apparent) stay sparse, and 16.9 MB on tmpfs, where they do not:
# 15.8 MB of it with no point at all. A point costs its vector and payload twice (segment and write-ahead log)
# and about 1 KB more (sparse vector, indexes): 6.5 to 7.3 KB a point on the four books measured.
ENGINE_FIXED_BYTES = 16 * MB
POINT_OVERHEAD_BYTES = 2048
SPACE_MARGIN = 1.5


class _OpenShard:
    """This process's hold on one shard folder: the lock file and the loaded shard, shared by its EdgeStores."""

    def __init__(self, key: Path, lock_file):
        self.key, self.lock_file = key, lock_file
        self.shard: qe.EdgeShard | None = None
        self.users = 0


_OPEN: dict[Path, _OpenShard] = {}  # by lock file path
_OPEN_GUARD = threading.Lock()


class EdgeStore:
    def __init__(self, root: Path, collection: str):
        self.root = Path(root)
        self.collection = collection
        self.path = self.root / collection
        self._lock_path = self.root / f"{collection}.lock"
        self._record_path = self.root / f"{collection}.ingest.json"
        self._held: _OpenShard | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _lock(self) -> _OpenShard:
        if self._held is not None:
            return self._held
        with _OPEN_GUARD:
            key = self._lock_path.resolve()
            if key not in _OPEN:
                _OPEN[key] = _OpenShard(key, self._take_lock())
            self._held = _OPEN[key]
            self._held.users += 1
        return self._held

    def _take_lock(self):
        try:
            with disk_full_is_an_error(self.root):
                self.root.mkdir(parents=True, exist_ok=True)
                handle = open(self._lock_path, "a+")  # noqa: SIM115 - kept open: the flock lasts as long as it
        except OSError as exc:
            raise StoreError(f"cannot write in the index folder {self.root} ({exc.strerror}): check "
                             "BOOKRAG_DATA_DIR and its permissions") from None
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
        with disk_full_is_an_error(self.root):
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        return handle

    @property
    def shard(self) -> qe.EdgeShard:
        held = self._lock()
        if held.shard is None:
            if not self.exists():
                raise StoreError(f"collection {self.collection!r} does not exist yet: run `python ingest.py BOOK_DIR`")
            if in_memory(self.root):
                require_free(self.root, self._unallocated_vector_bytes())
            try:
                held.shard = qe.EdgeShard.load(str(self.path))
            except Exception as exc:  # noqa: BLE001 - the engine raises plain exceptions
                raise StoreError(
                    f"cannot open the index at {self.path} ({exc}); rebuild it with `python ingest.py BOOK_DIR --recreate`"
                ) from None
        return held.shard

    def exists(self) -> bool:
        return self.path.is_dir()

    def check_space(self, points: int, payload_bytes: int, dim: int) -> None:
        """Refuse (StoreError, exit 3) unless the disk holds what writing `points` points of `dim` floats and
        `payload_bytes` of payload text takes, with a margin: the engine meets a full disk with SIGBUS."""
        per_point = 2 * dim * 4 + POINT_OVERHEAD_BYTES
        require_free(self.root, int(SPACE_MARGIN * (ENGINE_FIXED_BYTES + points * per_point + 2 * payload_bytes)))

    def _unallocated_vector_bytes(self) -> int:
        """The holes in the dense vector files: loading the shard touches every page of them, which on tmpfs
        allocates each one (32 MB for a small book); on a disk (ext4) a hole read stays a hole."""
        files = (self.path / "segments").glob(f"*/vector_storage-{DENSE}/vectors/chunk_*.mmap")
        return sum(max(0, f.stat().st_size - f.stat().st_blocks * 512) for f in files)

    def create(self, dim: int) -> None:
        self._lock()
        self.set_ingest_record(None)
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
        held = self._lock()
        self.set_ingest_record(None)
        if held.shard is not None:  # closed for every user in this process; the next access loads the new one
            held.shard.close()
            held.shard = None
        if self.exists():
            trash = self.root / f".{self.collection}.dropping-{uuid.uuid4().hex[:8]}"
            os.replace(self.path, trash)
            shutil.rmtree(trash, ignore_errors=True)

    def flush(self) -> None:
        if self._held is not None and self._held.shard is not None:
            self._held.shard.flush()

    def close(self) -> None:
        """Let go of the shard; the last user in this process closes it and releases the lock."""
        held, self._held = self._held, None
        if held is None:
            return
        with _OPEN_GUARD:
            held.users -= 1
            if held.shard is not None:
                held.shard.flush()
            if held.users:
                return
            if held.shard is not None:
                held.shard.close()
            held.lock_file.close()  # releases the flock
            del _OPEN[held.key]

    # -- the ingest record -------------------------------------------------------------------------------
    def ingest_record(self) -> dict | None:
        try:
            return json.loads(self._record_path.read_text())
        except (OSError, ValueError):  # none yet, or unreadable: either way the next ingest writes it
            return None

    def set_ingest_record(self, record: dict | None) -> None:
        self._lock()
        if record is None:
            self._record_path.unlink(missing_ok=True)
            return
        staging = self._record_path.with_name(f".{self._record_path.name}.{uuid.uuid4().hex[:8]}")
        try:
            with disk_full_is_an_error(self.root):
                staging.write_text(json.dumps(record) + "\n")
        except StoreError:
            staging.unlink(missing_ok=True)  # a partial record must not take the little room left
            raise
        os.replace(staging, self._record_path)  # the record exists whole or not at all

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
            stage = {
                "query": qe.Fusion.Rrf(k=RRF_K),
                "prefetches": [
                    qe.Prefetch(limit=q.candidates, query=dense, params=exact, filter=where),
                    qe.Prefetch(limit=q.candidates, query=sparse, filter=where),
                ],
            }
        else:
            stage = {"query": dense if q.mode == "dense" else sparse, "filter": where, "params": exact}
        if q.mmr:  # diversify the stage's candidates by dense similarity
            pool = qe.Prefetch(limit=q.candidates, **stage)
            mmr = qe.Mmr(q.dense, lambda_=0.5, candidates_limit=q.candidates, using=DENSE)
            stage = {"query": mmr, "prefetches": [pool], "params": exact}
        return qe.QueryRequest(limit=q.limit, with_payload=True, **stage)
