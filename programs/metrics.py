"""Metrics over labeled questions: retrieval (recall@k, MRR), answers (key facts), refusals, citations."""

from __future__ import annotations

import re
import unicodedata

from retrievers.passage import Passage

_NUMBER_UNIT = re.compile(r"(\d)\s+(?=[a-z%°])")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower case, unified unicode, collapsed whitespace, and no space between a number and its unit."""
    text = unicodedata.normalize("NFKC", text).lower().replace("‑", "-").replace("–", "-")
    text = _SPACE.sub(" ", text).strip()
    return _NUMBER_UNIT.sub(r"\1", text)


def fact_present(fact: str, answer: str) -> bool:
    """Whether one key fact occurs in the answer: case-, whitespace- and number/unit-spacing-insensitive."""
    return normalize(fact) in normalize(answer)


def key_fact_recall(key_facts, answer: str) -> float:
    if not key_facts:
        return 1.0
    return sum(fact_present(f, answer) for f in key_facts) / len(key_facts)


def first_gold_rank(passages: list[Passage], gold_sources) -> int | None:
    """1-based rank of the first passage from a gold source, or None."""
    gold = set(gold_sources)
    return next((rank for rank, p in enumerate(passages, start=1) if p.source in gold), None)


def recall_at_k(passages: list[Passage], gold_sources, k: int) -> float:
    rank = first_gold_rank(passages[:k], gold_sources)
    return 1.0 if rank is not None else 0.0


def reciprocal_rank(passages: list[Passage], gold_sources) -> float:
    rank = first_gold_rank(passages, gold_sources)
    return 1.0 / rank if rank else 0.0
