"""`ExtractiveAnswer`: an answer made of the book's own sentences, the fast mode that needs no LM.

It cannot hallucinate: every sentence is quoted from a retrieved passage, and the citations are the passages
the sentences came from. Sentences are ranked by `scored_sentences`. A sentence that announces a list
(`The states are:`) brings the items after it, where the answer usually is; a table row brings its header.
"""

from __future__ import annotations

from dataclasses import dataclass

from programs.text.passage_sentences import Sentence, scored_sentences
from programs.text.query_terms import words_found
from retrievers.passage import Passage

_SENTENCE_END = (".", "!", "?")


@dataclass(frozen=True)
class Extract:
    answer: str
    citations: list[int]  # 1-based passage numbers
    coverage: float  # share of the question's content words the answer contains


class ExtractiveAnswer:
    def __init__(self, max_sentences: int = 5, max_words: int = 120):
        self.max_sentences, self.max_words = max_sentences, max_words

    def __call__(self, question: str, passages: list[Passage]) -> Extract:
        scores = scored_sentences(question, passages)
        if not scores:
            return Extract("", [], 0.0)
        chosen = self._choose(list(scores), scores)
        chosen.sort(key=lambda u: (u.number, u.index))  # book order reads better than score order
        answer = _join([u.text for u in chosen])
        return Extract(answer=answer, citations=sorted({u.number for u in chosen}),
                       coverage=words_found(question, [answer]))

    def _choose(self, units: list[Sentence], scores: dict[Sentence, float]) -> list[Sentence]:
        """The best-scoring units within the budget, each with the units it needs (a list lead-in its items, a table
        row its header); a sentence repeated by overlapping chunks (or duplicated pages) is quoted once."""
        by_place = {(u.number, u.index): u for u in units}
        chosen: list[Sentence] = []
        quoted: set[str] = set()
        words = 0

        def take(u: Sentence) -> bool:
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
            for place in u.needs:
                if place in by_place and not take(by_place[place]):
                    break
        return chosen


def _join(texts: list[str]) -> str:
    """Sentences run on as prose; list items, table rows and code lines (no full stop) each get a line."""
    answer = texts[0] if texts else ""
    for text in texts[1:]:
        answer += (" " if answer.endswith(_SENTENCE_END) else "\n") + text
    return answer
