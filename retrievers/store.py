"""The small interface both Qdrant back ends offer (embedded engine and server), and its plain data types.

Same schema in both: a `dense` cosine vector, a `bm25` sparse vector with Qdrant's IDF modifier, and keyword
payload indexes on `module` and `source`. Both also keep an ingest record beside the points: the indexer removes it
before its first write and writes it after its last, so a collection without one was left by an unfinished ingest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from bookrag.config import SearchMode

DENSE, SPARSE = "dense", "bm25"
RRF_K = 60  # the usual reciprocal-rank-fusion constant, the same for both back ends
INDEXED_FIELDS = ("module", "source")


@dataclass(frozen=True)
class Sparse:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class StoredPoint:
    id: str
    dense: list[float]
    sparse: Sparse
    payload: dict


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict


@dataclass(frozen=True)
class StoreQuery:
    mode: SearchMode
    limit: int
    dense: list[float] | None = None
    sparse: Sparse | None = None
    module: str | None = None
    mmr: bool = False  # re-rank candidates for diversity (dense similarity), lambda 0.5
    candidates: int = 40  # per-branch prefetch size for hybrid, candidate pool for MMR


class VectorStore(Protocol):
    collection: str

    def exists(self) -> bool: ...

    def create(self, dim: int) -> None: ...

    def check_space(self, points: int, payload_bytes: int, dim: int) -> None:
        """Raise StoreError if writing this many points would fill the disk (the ingest asks before it writes)."""

    def dimension(self) -> int: ...

    def drop(self) -> None: ...

    def upsert(self, points: list[StoredPoint]) -> None: ...

    def delete(self, ids: list[str]) -> None: ...

    def set_payloads(self, payloads: dict[str, dict]) -> None: ...

    def scan(self) -> Iterator[Hit]: ...

    def count(self) -> int: ...

    def query_batch(self, queries: list[StoreQuery]) -> list[list[Hit]]: ...

    def ingest_record(self) -> dict | None: ...

    def set_ingest_record(self, record: dict | None) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
