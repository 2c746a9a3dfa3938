"""`ExtractiveAnswer`: an answer made of the book's own sentences, for when no capable LM is available.

It cannot hallucinate: every sentence is quoted from a retrieved passage, and the citations are the passages
the sentences came from. Sentences are ranked by the question's content words they contain, weighted by how
rare each word is among the candidates, with a small preference for higher-ranked passages.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from programs.query_terms import content_terms, term_set
from retrievers.passage import Passage

_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(\[])|\n+")
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+\.|#+|>)\s+|\*\*|__|`")


@dataclass(frozen=True)
class Extract:
    answer: str
    citations: list[int]  # 1-based passage numbers
    coverage: float  # share of the question's content words the answer contains


class ExtractiveAnswer:
    def __init__(self, max_sentences: int = 3, max_words: int = 90):
        self.max_sentences, self.max_words = max_sentences, max_words

    def __call__(self, question: str, passages: list[Passage]) -> Extract:
        terms = content_terms(question)
        units = [
            (number, index, text)
            for number, passage in enumerate(passages, start=1)
            for index, text in enumerate(_units(passage.text))
        ]
        if not units or not terms:
            return Extract("", [], 0.0)
        unit_terms = [term_set(text) for _, _, text in units]
        idf = {t: math.log(1 + len(units) / (1 + sum(t in u for u in unit_terms))) for t in terms}

        def score(i: int) -> float:
            number, _, text = units[i]
            matched = sum(idf[t] for t in terms if t in unit_terms[i])
            return matched / math.sqrt(max(8, len(text.split()))) * (1.0 - 0.05 * (number - 1))

        ranked = sorted(range(len(units)), key=score, reverse=True)
        chosen, words = [], 0
        for i in ranked:
            if score(i) <= 0 or len(chosen) >= self.max_sentences:
                break
            length = len(units[i][2].split())
            if chosen and words + length > self.max_words:
                continue
            chosen.append(i)
            words += length
        chosen.sort(key=lambda i: (units[i][0], units[i][1]))  # book order reads better than score order
        answer = " ".join(units[i][2] for i in chosen)
        covered = term_set(answer)
        return Extract(
            answer=answer,
            citations=sorted({units[i][0] for i in chosen}),
            coverage=sum(t in covered for t in terms) / len(terms),
        )


def _units(text: str) -> list[str]:
    """Sentences and list items of a passage, without Markdown markup; code fences and table rulers dropped."""
    units, in_code = [], False
    for raw in _UNIT_SPLIT.split(text):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code or not line or set(line) <= set("|-: "):
            continue
        line = _MARKUP.sub("", line).strip()
        if len(line.split()) >= 3:
            units.append(line)
    return units
