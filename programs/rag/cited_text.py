"""The words of a cited passage that support an answer: its sentence that holds the answer's claims, with the
sentence beside it when that one holds more of them or is needed to read it ("It is 1.2 m tall."), and their
character offsets in the passage text, as DSPy's `Citations` give them.

A sentence the answer quotes (the extractive and quoted modes answer in the book's sentences) supports it. Else the
claims are the claim check's (numbers with their units, versions, names: `check_claims`), read sentence by sentence;
a claim the question already names echoes it, and supports nothing. An answer that states no claim of its own is
matched by its own content words. A passage that holds none of them gets no cited text: a sentence on the same topic
would look like support that is not there.
"""

from __future__ import annotations

from dataclasses import dataclass

from programs.refusal.claim_check import check_claims
from programs.text.passage_sentences import Sentence, passage_sentences, scored_sentences
from programs.text.query_terms import content_terms, term_set
from retrievers.passage import Passage

# An answer with no claim of its own is found in a sentence holding this many of its own content words, and this
# share of them: one shared word is a topic, not support.
MIN_KEY_WORDS, MIN_KEY_WORD_SHARE = 2, 0.25
MIN_QUOTED_WORDS = 3  # a shorter line found in the answer ("bool success") may be a coincidence
# Markdown that `passage_sentences` takes out of a sentence (bold, code, `__`): skipped when it is found again.
_MARKUP = frozenset("*_`")


@dataclass(frozen=True)
class CitedText:
    """`passage.text[start_char_index:end_char_index]`: the words of the passage that support the answer."""

    cited_text: str
    start_char_index: int
    end_char_index: int


def cited_texts(answer: str, question: str, passages: list[Passage], citations: list[int]) -> list[CitedText | None]:
    """The cited text of each cited passage (`citations`: 1-based numbers into `passages`), None where it holds
    nothing the answer says."""
    return [cited_text(answer, question, passages[n - 1]) for n in citations]


def cited_text(answer: str, question: str, passage: Passage) -> CitedText | None:
    relevance = scored_sentences(question, [passage])
    chosen = AnswerSupport(answer, question).sentences(passage_sentences([passage]), relevance)
    if not chosen:
        return None
    spans = [_span(passage.text, s.text) for s in chosen]
    if None in spans:
        return None
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    return CitedText(passage.text[start:end], start, end)


class AnswerSupport:
    """What of an answer a sentence holds: its claims the question does not name, else its own content words."""

    def __init__(self, answer: str, question: str):
        self.answer, self.flat_answer = answer, " ".join(answer.split())
        echoed = set(check_claims(question, ()).claims)
        self.claims = [c for c in check_claims(answer, ()).claims if c not in echoed]
        asked = set(content_terms(question))
        self.words = content_terms(answer)
        self.own_words = [w for w in self.words if w not in asked]

    def held_claims(self, text: str) -> frozenset[str]:
        unsupported = set(check_claims(self.answer, [text]).unsupported)
        return frozenset(c for c in self.claims if c not in unsupported)

    def quotes(self, text: str) -> bool:
        return len(text.split()) >= MIN_QUOTED_WORDS and " ".join(text.split()) in self.flat_answer

    def supports(self, text: str, held: frozenset[str]) -> bool:
        if self.quotes(text):
            return True
        if self.claims:
            return bool(held)
        terms = term_set(text)
        own = sum(w in terms for w in self.own_words)
        return own >= MIN_KEY_WORDS and own >= MIN_KEY_WORD_SHARE * len(self.own_words)

    def sentences(self, units: list[Sentence], relevance: dict[Sentence, float]) -> list[Sentence]:
        """The best-supporting sentence, then the one beside it that holds claims it lacks or that it needs; none
        when no sentence supports the answer. Best: a sentence the answer quotes, the most relevant to the question
        (`relevance`: `scored_sentences`, which chose it for an extractive answer of several), else the one holding
        the most claims, then the most of the answer's words."""
        held = {s: self.held_claims(s.text) for s in units}
        words = {s: len(term_set(s.text).intersection(self.words)) for s in units}

        def rank(s: Sentence) -> tuple:
            quoted = self.quotes(s.text)
            return quoted, relevance.get(s, 0.0) if quoted else 0.0, len(held[s]), words[s], -s.index

        ranked = sorted(units, key=rank, reverse=True)
        if not ranked or not self.supports(ranked[0].text, held[ranked[0]]):
            return []
        best = ranked[0]
        beside = [s for s in units if abs(s.index - best.index) == 1]
        adding = [s for s in beside if held[s] - held[best]]
        if adding:
            return sorted([best, max(adding, key=lambda s: len(held[s] - held[best]))], key=lambda s: s.index)
        before = next((s for s in beside if (s.number, s.index) in best.needs and s.index < best.index), None)
        return [before, best] if before else [best]


def _span(text: str, sentence: str) -> tuple[int, int] | None:
    """Where `sentence` (a unit of `passage_sentences`, without its Markdown) stands in `text`: found with spaces
    and markup left out of both, then widened over the markup around it (`**Kestrel**`)."""
    kept = [at for at, char in enumerate(text) if not char.isspace() and char not in _MARKUP]
    target = "".join(c for c in sentence if not c.isspace() and c not in _MARKUP)
    found = "".join(text[at] for at in kept).find(target) if target else -1
    if found < 0:
        return None
    start, end = kept[found], kept[found + len(target) - 1] + 1
    while start > 0 and text[start - 1] in _MARKUP:
        start -= 1
    while end < len(text) and text[end] in _MARKUP:
        end += 1
    return start, end
