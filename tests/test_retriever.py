"""QdrantRetriever over a small book indexed with the fake embedder (embedded store in tmp_path)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from conftest import FakeEmbedder, fake_vector
from qdrant_client import QdrantClient

from bookrag.errors import RetrievalError
from retrievers.book_index import BookIndex
from retrievers.passage import Passage
from retrievers.retriever import QdrantRetriever
from retrievers.server_store import ServerStore

MODES = ("dense", "sparse", "hybrid")


@pytest.fixture
def retriever(small_index) -> QdrantRetriever:
    return small_index.retriever


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_returns_passages_with_all_fields(retriever, small_index, mode):
    passages = retriever.search("gazebo physics friction", k=3, mode=mode)
    assert 1 <= len(passages) <= 3
    payloads = {h.id: h.payload for h in small_index.store.scan()}
    for p in passages:
        assert isinstance(p, Passage)
        stored = payloads[p.id]
        assert (p.text, p.title, p.heading, p.module, p.source, p.url, p.position) == (
            stored["text"], stored["title"], stored["heading"], stored["module"], stored["source"],
            stored["url"], stored["position"])
        assert p.text and p.title and p.heading and p.module and p.source and p.url.startswith("/docs/")
        assert set(p.to_dict()) == {f.name for f in dataclasses.fields(Passage)}
    top = passages[0]
    assert top.source == "02-sim/01-gazebo.md" and top.heading == "Gazebo Physics"
    assert top.url == "/docs/sim/gazebo" and top.module == "sim" and top.title == "Gazebo Physics"


def test_dense_scores_are_cosine_similarities(retriever, small_index):
    chunk = next(h.payload for h in small_index.store.scan() if h.payload["heading"] == "Launch Files")
    passages = retriever.search(f"{chunk['heading']}\n\n{chunk['text']}", k=3, mode="dense")
    assert passages[0].id == chunk["id"]
    assert passages[0].score == pytest.approx(1.0, abs=1e-4) == passages[0].dense_score
    assert passages[0].sparse_score is None
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


def test_sparse_mode_finds_the_chunk_holding_a_rare_keyword(retriever):
    passages = retriever.search("zephyrine", k=5, mode="sparse")
    assert len(passages) == 1  # BM25 only returns chunks that contain the word
    assert "zephyrine reliability profile" in passages[0].text
    assert passages[0].heading == "Nodes and Topics › Quality of service"
    assert passages[0].url == "/docs/ros2/nodes#quality-of-service"
    assert passages[0].score == passages[0].sparse_score > 0
    assert passages[0].dense_score is None


def test_hybrid_mode_reports_both_branch_scores(retriever):
    passages = retriever.search("gazebo physics friction", k=7, mode="hybrid")
    top = passages[0]
    assert top.heading == "Gazebo Physics"
    assert top.dense_score is not None and top.sparse_score is not None
    assert 0 < top.score < 0.05  # a reciprocal-rank-fusion score, not a cosine
    assert any(p.sparse_score is None for p in passages)  # chunks without the words: dense branch only


def test_module_filter_limits_results_to_that_module(retriever):
    for mode in MODES:
        passages = retriever.search("nodes topics physics sensors", k=10, mode=mode, module="sim")
        assert passages, mode
        assert {p.module for p in passages} == {"sim"}, mode
    assert retriever.search("nodes", k=10, module="no-such-module") == []


def test_min_score_drops_passages_below_the_cosine_cut(retriever):
    unfiltered = retriever.search("gazebo physics friction", k=7, mode="dense")
    cut = (unfiltered[0].score + unfiltered[1].score) / 2
    filtered = retriever.search("gazebo physics friction", k=7, mode="dense", min_score=cut)
    assert [p.id for p in filtered] == [unfiltered[0].id]
    hybrid = retriever.search("gazebo physics friction", k=7, mode="hybrid", min_score=cut)
    assert [p.id for p in hybrid] == [unfiltered[0].id]  # hybrid cuts on the dense branch's cosine too


def test_min_score_in_sparse_mode_cuts_on_the_bm25_score(retriever):
    unfiltered = retriever.search("gazebo physics sensors", k=7, mode="sparse")
    assert len(unfiltered) >= 2
    cut = (unfiltered[0].score + unfiltered[1].score) / 2
    filtered = retriever.search("gazebo physics sensors", k=7, mode="sparse", min_score=cut)
    assert [p.id for p in filtered] == [unfiltered[0].id]


@pytest.mark.parametrize("mode", MODES)
def test_mmr_returns_k_distinct_passages(retriever, mode):
    query = "nodes launch gazebo sensors robot"  # words from five chunks, so sparse mode has enough candidates too
    assert len(retriever.search(query, k=4, mode=mode)) == 4
    passages = retriever.search(query, k=4, mode=mode, mmr=True)
    assert len(passages) == 4
    assert len({p.id for p in passages}) == 4
    assert all(p.dense_score is not None for p in passages)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_rejected(retriever, query):
    with pytest.raises(ValueError, match="^Query cannot be empty$"):
        retriever.search(query)


def test_unknown_mode_is_rejected(retriever):
    with pytest.raises(ValueError, match="mode must be one of dense, sparse, hybrid"):
        retriever.search("nodes", mode="keyword")


def test_search_on_a_collection_never_created_is_a_retrieval_error(settings, small_book):
    with BookIndex(settings, small_book, embedder=FakeEmbedder()) as index:
        assert index.ingest_state() == "missing"
        with pytest.raises(RetrievalError, match="does not exist yet"):
            index.retriever.search("nodes")


def test_search_on_a_missing_server_collection_is_a_retrieval_error():
    store = ServerStore(QdrantClient(":memory:"), "missing", "http://qdrant.example:6333")
    retriever = QdrantRetriever(store, FakeEmbedder())
    with pytest.raises(RetrievalError, match="Qdrant at http://qdrant.example:6333 failed to search"):
        retriever.search("nodes")


def test_debug_log_names_the_query_and_the_chunk_ids(retriever, caplog):
    caplog.set_level(logging.DEBUG, logger="retrievers.retriever")
    passages = retriever.search("lidar sensors noisy", k=2, mode="hybrid")
    (record,) = [r for r in caplog.records if r.name == "retrievers.retriever"]
    assert record.levelno == logging.DEBUG
    message = record.getMessage()
    assert "'lidar sensors noisy'" in message and "mode=hybrid" in message and "k=2" in message
    assert passages and all(p.id in message for p in passages)


def test_queries_are_embedded_with_the_query_side_of_the_embedder(small_index, fake_embedder):
    small_index.retriever.search("launch files", k=1, mode="dense")
    small_index.retriever.search("launch files", k=1, mode="sparse")
    assert fake_embedder.queries == ["launch files"]  # sparse mode needs no dense vector


def test_book_index_is_complete_and_its_fingerprint_follows_the_text(small_index, small_book):
    assert small_index.ingest_state() == "complete"
    before = small_index.fingerprint()
    assert before == small_index.fingerprint() and len(before) == 16
    page = small_book / "01-ros2" / "02-launch.md"
    page.write_text(page.read_text() + "\nA new closing paragraph.\n")
    small_index.ingest(progress=False)
    assert small_index.fingerprint() != before
    assert small_index.collection.startswith("small-book-") and small_index.collection.endswith("__fake16")


def test_fake_embedder_vectors_are_unit_length_and_deterministic():
    vec = fake_vector("Nodes talk over topics")
    assert len(vec) == FakeEmbedder.dim
    assert sum(v * v for v in vec) == pytest.approx(1.0)
    assert vec == fake_vector("nodes TALK over topics")
