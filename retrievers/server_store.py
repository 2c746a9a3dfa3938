"""A Qdrant server or cluster through `qdrant-client` (QDRANT_URL + QDRANT_API_KEY, or QDRANT_HOST/QDRANT_PORT).

The ingest record is kept in the collection's own metadata (key `bookrag_ingest`): it lives and dies with the
collection, and unlike a marker point it never shows up in a search, a count or a scan.
Tests drive this same class with `QdrantClient(":memory:")`, which speaks the same client models.
"""

from __future__ import annotations

from collections.abc import Iterator

from qdrant_client import QdrantClient, models

from bookrag.config import Settings
from bookrag.errors import StoreError
from bookrag.redaction import mask_url
from retrievers.store import DENSE, INDEXED_FIELDS, RRF_K, SPARSE, Hit, StoredPoint, StoreQuery

_SCAN_PAGE = 512
_UPSERT_BATCH = 256
_RECORD_KEY = "bookrag_ingest"


class ServerStore:
    def __init__(self, client: QdrantClient, collection: str, where: str = "the Qdrant server"):
        self.client = client
        self.collection = collection
        self.where = mask_url(where)  # for messages: the URL without its userinfo, never the key

    @classmethod
    def connect(cls, settings: Settings, collection: str) -> ServerStore:
        key = settings.qdrant_api_key.reveal() if settings.qdrant_api_key else None
        if settings.qdrant_url:
            client = QdrantClient(url=settings.qdrant_url, api_key=key, timeout=30)
            where = settings.qdrant_url
        else:
            client = QdrantClient(host=settings.qdrant_host, port=settings.qdrant_port, api_key=key, timeout=30)
            where = f"{settings.qdrant_host}:{settings.qdrant_port}"
        return cls(client, collection, where)

    def _call(self, what: str, fn, *args, **kwargs):
        """Run a client call; connection and API failures become a StoreError a user can act on."""
        try:
            return fn(*args, **kwargs)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - httpx, grpc and API errors all mean the same to the user
            reason = type(exc).__name__
            status = getattr(exc, "status_code", None)
            raise StoreError(
                f"Qdrant at {self.where} failed to {what} ({reason}{f' {status}' if status else ''}); "
                "check QDRANT_URL / QDRANT_HOST, QDRANT_PORT and QDRANT_API_KEY, and that the server is running"
            ) from None

    def exists(self) -> bool:
        return self._call("list collections", self.client.collection_exists, self.collection)

    def create(self, dim: int) -> None:
        self._call(
            "create the collection",
            self.client.create_collection,
            self.collection,
            vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        for name in INDEXED_FIELDS:
            self._call(
                "index the payload", self.client.create_payload_index, self.collection, name,
                field_schema=models.PayloadSchemaType.KEYWORD,
            )

    def check_space(self, points: int, payload_bytes: int, dim: int) -> None:
        """The server's disk is the server's: it answers a full disk with an error, which `_call` reports."""

    def dimension(self) -> int:
        info = self._call("read the collection", self.client.get_collection, self.collection)
        return info.config.params.vectors[DENSE].size

    def drop(self) -> None:
        self._call("delete the collection", self.client.delete_collection, self.collection)

    def upsert(self, points: list[StoredPoint]) -> None:
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [
                models.PointStruct(
                    id=p.id,
                    vector={DENSE: p.dense, SPARSE: models.SparseVector(indices=p.sparse.indices, values=p.sparse.values)},
                    payload=p.payload,
                )
                for p in points[start : start + _UPSERT_BATCH]
            ]
            self._call("upsert points", self.client.upsert, self.collection, points=batch, wait=True)

    def delete(self, ids: list[str]) -> None:
        if ids:
            selector = models.PointIdsList(points=list(ids))
            self._call("delete points", self.client.delete, self.collection, points_selector=selector, wait=True)

    def set_payloads(self, payloads: dict[str, dict]) -> None:
        for point_id, payload in payloads.items():
            self._call("update a payload", self.client.overwrite_payload, self.collection, payload=payload,
                       points=[point_id], wait=True)

    def scan(self) -> Iterator[Hit]:
        offset = None
        while True:
            records, offset = self._call(
                "scroll points", self.client.scroll, self.collection, limit=_SCAN_PAGE, offset=offset,
                with_payload=True, with_vectors=False,
            )
            for record in records:
                yield Hit(str(record.id), 0.0, record.payload or {})
            if offset is None:
                return

    def count(self) -> int:
        return self._call("count points", self.client.count, self.collection, exact=True).count

    def query_batch(self, queries: list[StoreQuery]) -> list[list[Hit]]:
        responses = self._call(
            "search", self.client.query_batch_points, self.collection, requests=[self._request(q) for q in queries]
        )
        return [[Hit(str(p.id), p.score, p.payload or {}) for p in r.points] for r in responses]

    def ingest_record(self) -> dict | None:
        info = self._call("read the collection", self.client.get_collection, self.collection)
        return (info.config.metadata or {}).get(_RECORD_KEY)

    def set_ingest_record(self, record: dict | None) -> None:
        # Metadata updates merge into what is stored: the record is one key, replaced (or set to null) whole.
        self._call("write the collection metadata", self.client.update_collection, self.collection,
                   metadata={_RECORD_KEY: record})

    def flush(self) -> None:
        """Writes are acknowledged with wait=True; nothing is buffered client-side."""

    def close(self) -> None:
        self.client.close()

    @staticmethod
    def _request(q: StoreQuery) -> models.QueryRequest:
        exact = models.SearchParams(exact=True)
        where = (
            models.Filter(must=[models.FieldCondition(key="module", match=models.MatchValue(value=q.module))])
            if q.module else None
        )
        sparse = models.SparseVector(indices=q.sparse.indices, values=q.sparse.values) if q.sparse else None
        if q.mode == "hybrid":
            stage = {
                "query": models.RrfQuery(rrf=models.Rrf(k=RRF_K)),
                "prefetch": [
                    models.Prefetch(query=q.dense, using=DENSE, limit=q.candidates, filter=where, params=exact),
                    models.Prefetch(query=sparse, using=SPARSE, limit=q.candidates, filter=where),
                ],
            }
        else:
            vector, using = (q.dense, DENSE) if q.mode == "dense" else (sparse, SPARSE)
            stage = {"query": vector, "using": using, "filter": where, "params": exact}
        if q.mmr:  # diversify the stage's candidates by dense similarity
            pool = models.Prefetch(limit=q.candidates, **stage)
            mmr = models.NearestQuery(nearest=q.dense, mmr=models.Mmr(diversity=0.5, candidates_limit=q.candidates))
            stage = {"query": mmr, "using": DENSE, "prefetch": [pool], "params": exact}
        return models.QueryRequest(limit=q.limit, with_payload=True, **stage)
