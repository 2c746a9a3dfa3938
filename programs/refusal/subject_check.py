"""Whether the numbers of an answer belong to the thing asked.

A retrieved passage holds many figures; a small model often states the wrong one: the per-stage latency given as
the total budget, the default status code of a nearby sentence given for the one asked, a price given as a weight.
The claim check (`claim_check.py`) only asks whether some retrieved passage holds the number. Here a number must sit
in a sentence about the question's subject, read with what it needs (a table row with its header, a list's lead-in
with its items); or in the question itself, which may restate it. A sentence is about the subject when it shares a
content word with the question; a word found in most sentences (the robot's name in its own book) names no subject.
Requiring the question's names instead (`waist_yaw`) caught three more near-miss answers on the bundled dev split
but refused eight right ones: a right number often sits in a sentence that names its subject another way.
"""

from __future__ import annotations

from programs.rag.passage_sentences import Sentence, passage_sentences
from programs.rag.query_terms import content_terms, term_set
from programs.refusal.claim_check import check_claims
from retrievers.passage import Passage

# A question word found in more than this share of the sentences (the robot's name in its own book) says nothing
# about which sentence is about the question's subject.
MAX_SUBJECT_WORD_SHARE = 0.5


def subject_sentences(question: str, sentences: list[Sentence]) -> list[str]:
    """The texts of the sentences that share a distinctive word with the question, each with the sentences it needs
    (a table row its header, a list's lead-in its items)."""
    words = {s: term_set(s.text) for s in sentences}
    by_place = {(s.number, s.index): s for s in sentences}
    limit = MAX_SUBJECT_WORD_SHARE * len(sentences)
    terms = {t for t in content_terms(question) if sum(t in w for w in words.values()) <= limit}
    return [" ".join([by_place[p].text for p in s.needs if p in by_place] + [s.text])
            for s in sentences if terms & words[s]]


def values_off_subject(answer: str, question: str, passages: list[Passage]) -> tuple[str, ...]:
    """The numbers (with units) of the answer that no sentence about the question's subject holds, nor the
    question."""
    subject = subject_sentences(question, passage_sentences(passages))
    return check_claims(answer, [*subject, question], names=False).unsupported
