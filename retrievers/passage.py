"""A retrieved passage: a chunk of the book with the scores that ranked it."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Passage:
    id: str
    # The ranking score: the reranker's relevance when reranked, else the search mode's: cosine (dense), BM25
    # (sparse), RRF (hybrid).
    score: float
    text: str
    title: str
    heading: str
    module: str
    source: str
    url: str
    position: int = 0
    dense_score: float | None = None  # cosine similarity to the query, when the dense branch saw it
    sparse_score: float | None = None  # BM25 score, when the sparse branch saw it
    rerank_score: float | None = None  # the reranker's relevance to the query (0 to 1), when one reranked it

    @property
    def text_with_heading(self) -> str:
        """What a citation of this passage vouches for: its text with its title and heading."""
        return f"{self.title} {self.heading} {self.text}"

    def to_dict(self) -> dict:
        return asdict(self)


def rank_key(p: Passage) -> tuple:
    """Best first; equal scores (frequent with RRF) by cosine, then id, so tied passages keep a stable order."""
    return (-p.score, -(p.dense_score or 0.0), p.id)
