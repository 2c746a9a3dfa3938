"""retrievers/backends.py: each kind of back end is a table from the name its setting gives to what builds it."""

from __future__ import annotations

import pytest
from conftest import FakeEmbedder

from bookrag.config import Settings
from retrievers import backends
from retrievers.backends import EMBEDDERS, RERANKERS, STORES, make_embedder, make_reranker
from retrievers.embedding_cache import CachedEmbedder

KEYED = {"COHERE_API_KEY": "k"}


@pytest.mark.parametrize("table, environ, kind", [
    (STORES, {}, "store_kind"),
    (STORES, {"QDRANT_URL": "http://127.0.0.1:1"}, "store_kind"),
    (EMBEDDERS, {"BOOKRAG_EMBEDDER": "local"}, "embedder_kind"),
    (EMBEDDERS, {"BOOKRAG_EMBEDDER": "cohere", **KEYED}, "embedder_kind"),
    (RERANKERS, {"BOOKRAG_RERANKER": "cohere", **KEYED}, "reranker_kind"),
])
def test_every_name_a_setting_gives_has_its_builder(table, environ, kind):
    assert getattr(Settings.from_env(environ), kind) in table


def test_every_table_entry_is_a_name_a_setting_can_give():
    for name in EMBEDDERS:
        assert Settings.from_env({"BOOKRAG_EMBEDDER": name, **KEYED}).embedder_kind == name
    for name in RERANKERS:
        assert Settings.from_env({"BOOKRAG_RERANKER": name, **KEYED}).reranker_kind == name


def test_a_back_end_is_one_entry(tmp_path, monkeypatch):
    """An embedder added to the table is built, and cached, like the shipped ones."""
    monkeypatch.setitem(backends.EMBEDDERS, "local", lambda settings: FakeEmbedder())
    settings = Settings(data_dir=tmp_path, embedder="local")
    assert isinstance(make_embedder(settings, cached=False), FakeEmbedder)
    cached = make_embedder(settings)
    assert isinstance(cached, CachedEmbedder) and isinstance(cached.inner, FakeEmbedder)


def test_no_reranker_is_none(tmp_path):
    assert make_reranker(Settings(data_dir=tmp_path, reranker="none")) is None
