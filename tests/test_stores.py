"""One contract for both Qdrant back ends: the embedded engine (EdgeStore) and qdrant-client (ServerStore)."""

from __future__ import annotations

import math
import socket
import threading
import traceback
import uuid

import pytest
from qdrant_client import QdrantClient

from bookrag.config import Secret, Settings
from bookrag.errors import StoreError
from retrievers.backends import open_store
from retrievers.edge_store import EdgeStore
from retrievers.server_store import ServerStore
from retrievers.store import Sparse, StoredPoint, StoreQuery

DIM = 4

# qdrant-client's local mode and an unreachable server are chatty; none of these matter to the contract.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning"),
    pytest.mark.filterwarnings("ignore:Local mode performs exact:UserWarning"),
    pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection:UserWarning"),
    pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning"),
]


def pid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


def point(name: str, dense: list[float], terms: dict[int, float], module: str = "ros2", **payload) -> StoredPoint:
    return StoredPoint(
        pid(name), dense, Sparse(list(terms), list(terms.values())),
        {"name": name, "module": module, "source": f"{module}/{name}.md", "position": 3, **payload},
    )


# Term ids stand for words: 1 "node", 2 "topic", 3 "gazebo", 4 "physics", 5 "lidar".
POINTS = [
    point("nodes", unit(1, 0, 0, 0), {1: 2.0, 2: 1.0}),
    point("topics", unit(0.9, 0.4, 0, 0), {2: 2.0}),
    point("qos", unit(0.6, 0.8, 0, 0), {1: 0.5}),
    point("gazebo", unit(0, 0, 1, 0), {3: 2.0, 4: 1.0}, module="sim"),
    point("physics", unit(0, 0.1, 0.9, 0.2), {4: 2.0}, module="sim"),
    point("lidar", unit(0, 0, 0.2, 1), {5: 3.0}, module="sim"),
]


@pytest.fixture(params=["edge", "server"])
def store(request, tmp_path):
    if request.param == "edge":
        s = EdgeStore(tmp_path / "qdrant", "contract")
    else:
        s = ServerStore(QdrantClient(":memory:"), "contract")
    yield s
    s.close()


@pytest.fixture
def filled(store):
    store.create(DIM)
    store.upsert(POINTS)
    return store


def names(hits) -> list[str]:
    return [h.payload["name"] for h in hits]


def query(store, **kwargs) -> list:
    return store.query_batch([StoreQuery(**kwargs)])[0]


def test_create_makes_the_collection_and_it_reports_its_dimension(store):
    assert not store.exists()
    store.create(DIM)
    assert store.exists()
    assert store.dimension() in (0, DIM)  # an empty embedded shard has no vector to measure yet
    assert store.count() == 0
    store.upsert(POINTS[:1])
    assert store.dimension() == DIM


def test_upsert_then_scan_and_count_return_every_point_with_its_payload(filled):
    assert filled.count() == len(POINTS)
    scanned = {h.id: h.payload for h in filled.scan()}
    assert scanned == {p.id: p.payload for p in POINTS}
    assert isinstance(scanned[pid("nodes")]["position"], int)


def test_upserting_an_existing_id_replaces_the_point(filled):
    filled.upsert([point("nodes", unit(0, 0, 0, 1), {5: 1.0}, text="replaced")])
    assert filled.count() == len(POINTS)
    assert next(h for h in filled.scan() if h.id == pid("nodes")).payload["text"] == "replaced"
    assert names(query(filled, mode="dense", limit=1, dense=unit(0, 0, 0, 1))) == ["nodes"]


def test_scan_pages_through_more_points_than_one_page(store):
    store.create(DIM)
    many = [point(f"p{i}", unit(1, i % 7, 0, 1), {i % 50: 1.0}) for i in range(1100)]
    store.upsert(many)
    ids = [h.id for h in store.scan()]
    assert len(ids) == len(set(ids)) == 1100 == store.count()


def test_delete_removes_only_the_given_points(filled):
    filled.delete([pid("nodes"), pid("lidar")])
    filled.delete([])
    assert filled.count() == len(POINTS) - 2
    assert {h.payload["name"] for h in filled.scan()} == {"topics", "qos", "gazebo", "physics"}


def test_set_payloads_overwrites_whole_payloads(filled):
    filled.set_payloads({pid("qos"): {"name": "qos", "module": "ros2", "title": "New"}})
    payload = next(h.payload for h in filled.scan() if h.id == pid("qos"))
    assert payload == {"name": "qos", "module": "ros2", "title": "New"}
    assert filled.count() == len(POINTS)


def test_drop_removes_the_collection(filled):
    filled.drop()
    assert not filled.exists()


def test_dense_query_ranks_by_cosine(filled):
    hits = query(filled, mode="dense", limit=3, dense=unit(1, 0, 0, 0))
    assert names(hits) == ["nodes", "topics", "qos"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_sparse_query_finds_only_points_sharing_terms_ranked_by_weight(filled):
    hits = query(filled, mode="sparse", limit=10, sparse=Sparse([4], [1.0]))
    assert names(hits) == ["physics", "gazebo"]
    assert hits[0].score > hits[1].score > 0


def test_hybrid_query_puts_the_point_both_branches_agree_on_first(filled):
    # dense favours "gazebo" then "physics"; sparse (term 4) favours "physics" then "gazebo"; "lidar" is 3rd dense
    hits = query(filled, mode="hybrid", limit=3, dense=unit(0, 0, 1, 0.1), sparse=Sparse([4, 5], [1.0, 0.1]))
    assert set(names(hits)[:2]) == {"gazebo", "physics"}
    assert len(hits) == 3 and len({h.id for h in hits}) == 3
    assert all(h.payload["module"] == "sim" for h in hits)


def test_module_filter_applies_to_every_mode(filled):
    for mode in ("dense", "sparse", "hybrid"):
        hits = query(filled, mode=mode, limit=10, dense=unit(1, 0, 0, 0), sparse=Sparse([1, 2, 4], [1.0] * 3),
                     module="sim")
        assert hits, mode
        assert {h.payload["module"] for h in hits} == {"sim"}, mode
    assert query(filled, mode="dense", limit=10, dense=unit(1, 0, 0, 0), module="no-such-module") == []


def test_mmr_prefers_a_diverse_point_over_a_near_duplicate(store):
    store.create(DIM)
    store.upsert([
        point("a", unit(1, 0, 0, 0), {1: 1.0}),
        point("a-copy", unit(1, 0, 0, 0.05), {1: 1.0}),
        point("b", unit(0, 1, 0.1, 0), {1: 1.0}),
        point("far", unit(0, 0, 0, 1), {1: 1.0}),
    ])
    q = unit(1, 1, 0, 0)
    assert set(names(query(store, mode="dense", limit=2, dense=q))) == {"a", "a-copy"}
    diverse = query(store, mode="dense", limit=2, dense=q, mmr=True, candidates=4)
    assert set(names(diverse)) == {"a", "b"}


def test_query_batch_answers_each_query_in_order(filled):
    results = filled.query_batch([
        StoreQuery(mode="dense", limit=1, dense=unit(0, 0, 0, 1)),
        StoreQuery(mode="sparse", limit=1, sparse=Sparse([2], [1.0])),
    ])
    assert [names(r) for r in results] == [["lidar"], ["topics"]]


def test_embedded_store_without_a_collection_says_to_run_ingest(tmp_path):
    store = EdgeStore(tmp_path, "never-made")
    with pytest.raises(StoreError, match="does not exist yet.*ingest.py"):
        store.count()
    store.close()


def test_open_store_picks_the_back_end_from_the_settings(tmp_path):
    edge = open_store(Settings(data_dir=tmp_path), "c")
    assert isinstance(edge, EdgeStore) and edge.path == tmp_path / "qdrant" / "c"
    server = open_store(Settings(data_dir=tmp_path, qdrant_url="http://127.0.0.1:1"), "c")
    assert isinstance(server, ServerStore) and server.where == "http://127.0.0.1:1"
    server.close()
    join_version_checks()


def join_version_checks() -> None:
    """qdrant-client checks the server version in a background thread; let it warn inside this test."""
    for thread in threading.enumerate():
        if "_check_compatibility" in thread.name:
            thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_raises_store_error_naming_the_url_but_not_the_key():
    key = "qk-secret-7d1e0f9b"
    url = f"http://127.0.0.1:{free_port()}"
    store = ServerStore.connect(Settings(qdrant_url=url, qdrant_api_key=Secret(key)), "book__fake16")
    for call in (store.exists, store.count, lambda: store.create(4)):
        with pytest.raises(StoreError) as info:
            call()
        message = str(info.value)
        assert url in message
        assert "QDRANT_API_KEY" in message
        assert key not in message
        assert key not in "".join(traceback.format_exception(info.value))
        assert key not in repr(info.value)
    store.close()
    join_version_checks()


def test_unreachable_server_by_host_and_port_names_them():
    port = free_port()
    store = ServerStore(QdrantClient(url=f"http://127.0.0.1:{port}", timeout=1), "c", f"127.0.0.1:{port}")
    via_settings = ServerStore.connect(Settings(qdrant_host="127.0.0.1", qdrant_port=port), "c")
    for s in (store, via_settings):
        with pytest.raises(StoreError, match=f"127.0.0.1:{port} failed to list collections"):
            s.exists()
        s.close()
    join_version_checks()


def test_the_ingest_record_is_absent_until_written_and_replaced_whole(store):
    store.create(DIM)
    assert store.ingest_record() is None
    store.set_ingest_record({"points": 6, "note": "first"})
    store.set_ingest_record({"points": 7})
    assert store.ingest_record() == {"points": 7}
    store.set_ingest_record(None)
    assert store.ingest_record() is None


def test_dropping_the_collection_drops_its_ingest_record(store):
    store.create(DIM)
    store.set_ingest_record({"points": 0})
    store.drop()
    store.create(DIM)
    assert store.ingest_record() is None


def test_credentials_in_qdrant_url_never_appear_in_a_store_error():
    url = f"http://admin:qdrant-url-secret@127.0.0.1:{free_port()}"
    store = ServerStore.connect(Settings(qdrant_url=url), "book__fake16")
    with pytest.raises(StoreError) as info:
        store.exists()
    assert "qdrant-url-secret" not in "".join(traceback.format_exception(info.value))
    assert "admin" not in str(info.value) and f"127.0.0.1:{url.rsplit(':', 1)[1]}" in str(info.value)
    store.close()
    join_version_checks()


def test_the_ingest_record_keeps_the_book_and_its_file_snapshot_whole(store):
    """The record a reader compares with the folder: the book's path and, per file, size, mtime and hash."""
    store.create(DIM)
    files = {f"{n:02d}-part/page.md": [1200 + n, 1764000000123456789, "ab" * 32] for n in range(300)}
    store.set_ingest_record({"points": 5, "book": "/x/book", "files": files})
    assert store.ingest_record() == {"points": 5, "book": "/x/book", "files": files}
