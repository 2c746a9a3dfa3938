"""The sentences of retrieved passages, scored against a question: what the extractive answerer quotes and what
the compact context keeps.

A unit is a sentence, list item or code line. Its score is the question's content words it contains, weighted
by how rare each word is among the candidates, over the square root of its length, with a small preference for
higher-ranked passages.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from programs.rag.query_terms import content_terms, term_set
from retrievers.passage import Passage

_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(\[])|\n+")
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+\.|#+|>)\s+|\*\*|__|`")
# Measured on the train and dev questions of book A and the bundled book (benchmarks/offline_quality.py):
QUESTION_WEIGHT = 0.3  # a question in the book (review exercises) shares the words but never holds the answer
CODE_WEIGHT = 0.5  # code lines hold commands and values, but prose explains better when it matches as well
LIST_ITEMS = 4  # items that come with a sentence announcing a list (`The states are:`)


@dataclass(frozen=True)
class Sentence:
    number: int  # 1-based passage number
    index: int  # position in its passage
    text: str
    code: bool

    @property
    def lead_in(self) -> bool:
        return self.text.endswith(":")


def passage_sentences(passages: list[Passage]) -> list[Sentence]:
    return [
        Sentence(number, index, text, code)
        for number, passage in enumerate(passages, start=1)
        for index, (text, code) in enumerate(_units(passage.text))
    ]


def scored_sentences(question: str, passages: list[Passage]) -> dict[Sentence, float]:
    """Every sentence of the passages with its score against the question (empty when either has no words)."""
    terms = content_terms(question)
    sentences = passage_sentences(passages)
    if not sentences or not terms:
        return {}
    words = {s: term_set(s.text) for s in sentences}
    idf = {t: math.log(1 + len(sentences) / (1 + sum(t in ws for ws in words.values()))) for t in terms}

    def score(s: Sentence) -> float:
        matched = sum(idf[t] for t in terms if t in words[s])
        weight = (QUESTION_WEIGHT if s.text.endswith("?") else 1.0) * (CODE_WEIGHT if s.code else 1.0)
        return weight * matched / math.sqrt(max(8, len(s.text.split()))) * (1.0 - 0.05 * (s.number - 1))

    return {s: score(s) for s in sentences}


def _units(text: str) -> list[tuple[str, bool]]:
    """(text, is code) for the sentences, list items and code lines of a passage, without Markdown markup;
    fences and table rulers dropped."""
    units, in_code = [], False
    for raw in _UNIT_SPLIT.split(text):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if not line or set(line) <= set("|-: "):
            continue
        if not in_code:
            line = _MARKUP.sub("", line).strip()
        if len(line.split()) >= 3:
            units.append((line, in_code))
    return units
