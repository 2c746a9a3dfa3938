"""`ExtractiveAnswer`: an answer made of the book's own sentences, for when no capable LM is available.

It cannot hallucinate: every sentence is quoted from a retrieved passage, and the citations are the passages
the sentences came from. Sentences are ranked by the question's content words they contain, weighted by how
rare each word is among the candidates, with a small preference for higher-ranked passages. A sentence that
announces a list (`The states are:`) brings the items after it, where the answer usually is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from programs.rag.query_terms import content_terms, term_set
from retrievers.passage import Passage

_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(\[])|\n+")
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+\.|#+|>)\s+|\*\*|__|`")
_SENTENCE_END = (".", "!", "?")
# Measured on the train and dev questions of book A and the bundled book (benchmarks/offline_quality.py):
QUESTION_WEIGHT = 0.3  # a question in the book (review exercises) shares the words but never holds the answer
CODE_WEIGHT = 0.5  # code lines hold commands and values, but prose explains better when it matches as well
LIST_ITEMS = 4  # items quoted after a sentence that announces a list


@dataclass(frozen=True)
class Extract:
    answer: str
    citations: list[int]  # 1-based passage numbers
    coverage: float  # share of the question's content words the answer contains


@dataclass(frozen=True)
class _Unit:
    number: int  # 1-based passage number
    index: int  # position in its passage
    text: str
    code: bool

    @property
    def lead_in(self) -> bool:
        return self.text.endswith(":")


class ExtractiveAnswer:
    def __init__(self, max_sentences: int = 5, max_words: int = 120):
        self.max_sentences, self.max_words = max_sentences, max_words

    def __call__(self, question: str, passages: list[Passage]) -> Extract:
        terms = content_terms(question)
        units = [
            _Unit(number, index, text, code)
            for number, passage in enumerate(passages, start=1)
            for index, (text, code) in enumerate(_units(passage.text))
        ]
        if not units or not terms:
            return Extract("", [], 0.0)
        unit_terms = {u: term_set(u.text) for u in units}
        idf = {t: math.log(1 + len(units) / (1 + sum(t in ts for ts in unit_terms.values()))) for t in terms}

        def score(u: _Unit) -> float:
            matched = sum(idf[t] for t in terms if t in unit_terms[u])
            weight = (QUESTION_WEIGHT if u.text.endswith("?") else 1.0) * (CODE_WEIGHT if u.code else 1.0)
            return weight * matched / math.sqrt(max(8, len(u.text.split()))) * (1.0 - 0.05 * (u.number - 1))

        chosen = self._choose(units, {u: score(u) for u in units})
        chosen.sort(key=lambda u: (u.number, u.index))  # book order reads better than score order
        answer = _join([u.text for u in chosen])
        covered = term_set(answer)
        return Extract(
            answer=answer,
            citations=sorted({u.number for u in chosen}),
            coverage=sum(t in covered for t in terms) / len(terms),
        )

    def _choose(self, units: list[_Unit], scores: dict[_Unit, float]) -> list[_Unit]:
        """The best-scoring units within the budget, each list lead-in with its items; a sentence repeated by
        overlapping chunks (or duplicated pages) is quoted once."""
        after = {(u.number, u.index): u for u in units}
        chosen: list[_Unit] = []
        quoted: set[str] = set()
        words = 0

        def take(u: _Unit) -> bool:
            nonlocal words
            key, length = " ".join(u.text.lower().split()), len(u.text.split())
            if key in quoted or (chosen and words + length > self.max_words):
                return False
            chosen.append(u)
            quoted.add(key)
            words += length
            return True

        picked = 0
        for u in sorted(units, key=lambda u: scores[u], reverse=True):
            if scores[u] <= 0 or picked >= self.max_sentences:
                break
            if not take(u):
                continue
            picked += 1
            for step in range(1, LIST_ITEMS + 1 if u.lead_in else 1):
                item = after.get((u.number, u.index + step))
                if item is None or not take(item):
                    break
        return chosen


def _join(texts: list[str]) -> str:
    """Sentences run on as prose; list items, table rows and code lines (no full stop) each get a line."""
    answer = texts[0] if texts else ""
    for text in texts[1:]:
        answer += (" " if answer.endswith(_SENTENCE_END) else "\n") + text
    return answer


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
