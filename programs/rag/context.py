"""What the LM reads: the retrieved passages under their numbers, whole (`format_context`) or cut down to the
sentences that matter for the question (`CompactContext`).

A small local model reads its prompt at ~60-90 tokens/s on 2 cores: five whole 250-token passages cost 10-20 s
before it writes a word. The sentences that best match the question, within a word budget, keep most of the facts
an answer needs (`benchmarks/context_compression.py` measures the share of reference key facts present in the
context, before and after). A sentence ranks by its words in common with the question (`scored_sentences`) plus
its embedding's cosine to the question's, which finds "mass" for "weigh". A sentence that announces a list brings
its items, a table row its header. A list item keeps its marker (`- `, `3. `): with the markers, the local model
named a whole list where it had named part of it. Passages keep their retrieval numbers, so citations still name
retrieved passages; a passage with no chosen sentence is left out.

At inference the blocks are best-first. A training prompt may show them in another `order`, renumbered: a reader
trained only on facts in passage 1 learns the position instead of the reading (docs/results.md, 2026-11-28).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from programs.text.passage_sentences import Sentence, passage_sentences, scored_sentences
from retrievers.passage import Passage

# The local model's budget: ~350-430 prompt tokens, most key facts kept (benchmarks/context_compression.py).
LOCAL_CONTEXT_WORDS = 160
# A sentence's rank falls by this much for each place its passage is below the best retrieved one: the context keeps
# to the best passages, whose sentences read together, instead of collecting look-alike sentences from every passage
# (every key fact in the context, train+dev: FastAPI 0.827 -> 0.877, the other books unchanged).
PASSAGE_RANK_PENALTY = 0.2


def format_context(passages: list[Passage], order: Sequence[int] | None = None) -> str:
    """Every passage whole, under its number and heading."""
    return numbered_context(passages, {n: p.text for n, p in enumerate(passages, start=1)}, order)


def compact_texts(chosen: list[Sentence]) -> dict[int, str]:
    """The text each passage shows of the chosen sentences, by retrieval number (a list item with its marker)."""
    texts: dict[int, list[str]] = {}
    for s in chosen:
        texts.setdefault(s.number, []).append(s.line)
    return {number: "\n".join(lines) for number, lines in texts.items()}


def numbered_context(passages: list[Passage], texts: dict[int, str], order: Sequence[int] | None = None) -> str:
    """The block of each passage in `texts` (its text, by retrieval number), under its shown number, in shown order
    (`shown_numbers`)."""
    shown = shown_numbers(len(passages), order)
    numbers = sorted(texts, key=shown.__getitem__)
    return "\n\n".join(passage_block(shown[n], passages[n - 1], texts[n]) for n in numbers)


def shown_numbers(count: int, order: Sequence[int] | None = None) -> dict[int, int]:
    """The number each of `count` retrieved passages is shown under: its own (best-first), or its place in `order`,
    the retrieval numbers in the order shown."""
    order = list(range(1, count + 1)) if order is None else list(order)
    if sorted(order) != list(range(1, count + 1)):
        raise ValueError(f"order {order} is no arrangement of passages 1..{count}")
    return {number: place for place, number in enumerate(order, start=1)}


def passage_block(number: int, passage: Passage, text: str) -> str:
    """`[n] title › heading`, then the text the LM reads of passage n."""
    return f"[{number}] {heading(passage)}\n{text}"


class CompactContext:
    def __init__(self, embedder=None, max_words: int = LOCAL_CONTEXT_WORDS):
        self.embedder = embedder  # None: rank by shared words alone
        self.max_words = max_words

    def __deepcopy__(self, memo):
        # Optimizers deep-copy programs; the embedder (a model, a cache connection) is shared, not copied.
        return CompactContext(self.embedder, self.max_words)

    def __call__(self, question: str, passages: list[Passage]) -> str:
        return numbered_context(passages, compact_texts(self.choose(question, passages)))

    def choose(self, question: str, passages: list[Passage]) -> list[Sentence]:
        """The best-ranked sentences, each with the sentences it needs (a list's lead-in its items, a table row its
        header), within the word budget, in book order; a sentence repeated by overlapping chunks is kept once."""
        sentences = passage_sentences(passages)
        ranks = self.rank(question, sentences, passages)
        by_place = {(s.number, s.index): s for s in sentences}
        chosen: dict[Sentence, None] = {}
        seen: set[str] = set()
        words = 0
        for best in sorted(sentences, key=ranks.get, reverse=True):
            if words >= self.max_words:
                break
            for s in [by_place[place] for place in best.needs if place in by_place] + [best]:
                key = " ".join(s.text.lower().split())
                if key in seen:
                    continue
                if chosen and words + len(s.text.split()) > self.max_words:
                    break
                chosen[s] = None
                seen.add(key)
                words += len(s.text.split())
        return sorted(chosen, key=lambda s: (s.number, s.index))

    def rank(self, question: str, sentences: list[Sentence], passages: list[Passage]) -> dict[Sentence, float]:
        """Shared words (scaled to 0..1 by the best sentence) plus embedding cosine, less the passage's place."""
        lexical = scored_sentences(question, passages)
        top = max(lexical.values(), default=0.0) or 1.0
        ranks = {s: lexical.get(s, 0.0) / top - PASSAGE_RANK_PENALTY * (s.number - 1) for s in sentences}
        if self.embedder is not None and sentences:
            query = np.asarray(self.embedder.embed_query(question))
            vectors = np.asarray(self.embedder.embed_documents([s.text for s in sentences]))
            for s, cosine in zip(sentences, vectors @ query):
                ranks[s] += float(cosine)
        return ranks


def heading(passage: Passage) -> str:
    """Where a passage sits: its heading path, which usually starts with the page title already."""
    if not passage.heading or passage.heading == passage.title:
        return passage.title
    if passage.heading.startswith(passage.title):
        return passage.heading
    return f"{passage.title} › {passage.heading}"
