"""A question in other words than the book's is searched by meaning alone (`BookRAG.search`).

The book is embedded by a bag of words that knows a few synonyms (crew ~ people, trials ~ test), as a sentence
embedder does; BM25 knows none. The paraphrase shares one word ("trials") with pages that do not answer it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import FakeEmbedder, fake_vector, write_book

from bookrag.config import Settings
from programs.rag.book_rag import BookRAG
from programs.text.query_terms import words_found
from retrievers.book_index import BookIndex

SYNONYMS = {"crew": "people", "big": "least", "trials": "test", "watch": "supervise"}
BOOK = {
    "safety.md": "# Hardware safety\n\nAt least two people supervise every hardware test of the robot.\n",
    "batches.md": "# Batches\n\nSimulation trials run in batches of episodes on the cluster.\n",
    "seeds.md": "# Seeds\n\nRandom seeds make simulation trials repeatable from one run to the next.\n",
    "logs.md": "# Logs\n\nEvery simulation trial writes a log file named after its seed.\n",
}
PARAPHRASE = "How big must the crew be that would watch trials?"  # crew, big, watch: words of no page
BOOK_WORDS = "How many people supervise every hardware test?"


class SynonymEmbedder(FakeEmbedder):
    name = "synonym16"

    def embed_documents(self, texts):
        return [fake_vector(self._meaning(t)) for t in texts]

    def embed_query(self, text):
        return fake_vector(self._meaning(text))

    @staticmethod
    def _meaning(text: str) -> str:
        return " ".join(SYNONYMS.get(w.strip("?.,").lower(), w) for w in text.split())


@pytest.fixture
def program(tmp_path):
    book = write_book(tmp_path / "book", BOOK)
    with BookIndex(Settings(data_dir=tmp_path / "data", book_dir=book), book, embedder=SynonymEmbedder()) as index:
        index.ingest(progress=False)
        yield BookRAG(index.retriever, top_k=2, answer_mode="extractive")


def sources(passages) -> list[str]:
    return [p.source for p in passages]


def test_words_found_is_the_share_of_the_questions_content_words_some_text_holds():
    assert words_found("How big must the crew be?", ["The crew is small."]) == pytest.approx(1 / 3)
    assert words_found("How big must the crew be?", ["A big crew must wait.", "nothing"]) == 1.0
    assert words_found("How big must the crew be?", []) == 0.0
    assert words_found("What is it?", ["anything"]) == 1.0  # no content word: nothing to miss


def test_a_question_in_other_words_is_searched_by_meaning(program):
    hybrid = program.retriever.search(PARAPHRASE, k=2, mode="hybrid")
    assert "safety.md" not in sources(hybrid)  # BM25's hits on "trials" push the answering page out
    assert words_found(PARAPHRASE, [p.text for p in hybrid]) < 0.5

    passages = program.retrieve(PARAPHRASE, k=2)
    assert sources(passages) == sources(program.retriever.search(PARAPHRASE, k=2, mode="dense"))
    assert sources(passages)[0] == "safety.md"


def test_a_question_in_the_books_words_keeps_the_hybrid_search(program):
    passages = program.retrieve(BOOK_WORDS, k=2)
    assert sources(passages) == sources(program.retriever.search(BOOK_WORDS, k=2, mode="hybrid"))
    assert sources(passages)[0] == "safety.md"


def test_a_dense_or_sparse_program_searches_in_its_own_mode_only(program):
    program.search_mode = "sparse"
    assert sources(program.retrieve(PARAPHRASE, k=2)) == sources(program.retriever.search(PARAPHRASE, k=2,
                                                                                          mode="sparse"))
