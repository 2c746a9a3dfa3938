"""Whether the numbers of an answer belong to the thing asked.

A retrieved passage holds many figures; a small model often states the wrong one: the per-stage latency given as
the total budget, the default status code of a nearby sentence given for the one asked, a price given as a weight.
The claim check (`claim_check.py`) only asks whether some retrieved passage holds the number. Here a number must sit
in a sentence about the question's subject, read with what it needs (a table row with its header, a list's lead-in
with its items); or in the question itself, which may restate it. A sentence is about the subject when it shares a
content word with the question; a word found in most sentences (the robot's name in its own book) names no subject.
Requiring the question's names instead (`waist_yaw`) caught three more near-miss answers on the bundled dev split
but refused eight right ones: a right number often sits in a sentence that names its subject another way.

A follow-up's answer may restate the turn before it, as it may the question: after "What QoS depth does the IMU
topic use?" ("5"), "And what reliability does it use?" is answered "a depth of 5 and BEST_EFFORT reliability". So the
question is read with that turn (`follow_up_text`, as retrieval reads it). That turn's words are not added to the
subject's: on the bundled book's four must-refuse follow-ups (passages ranked by shared words), they let 22 of the 53
figures the check refuses through; its numbers let none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bookrag.questions import follow_up_text
from programs.refusal.claim_check import check_claims
from programs.text.passage_sentences import Sentence, passage_sentences
from programs.text.query_terms import content_terms, stem, term_set
from retrievers.passage import Passage

# A question word found in more than this share of the sentences (the robot's name in its own book) says nothing
# about which sentence is about the question's subject.
MAX_SUBJECT_WORD_SHARE = 0.5
_IDENTIFIER_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def subject_sentences(question: str, sentences: list[Sentence]) -> list[str]:
    """The texts of the sentences that share a distinctive word with the question, or whose neighbour does (a code
    line under its comment, a value after the sentence that introduces it), each with the sentences it needs (a
    table row its header, a list's lead-in its items). A table row is about the subject by its own words, unless another
    row's label (first cell) names all of the subject its label names, and more: the `l_shoulder_pitch` row holds no
    figure of the hip pitch when the `l_hip_pitch` row is there."""
    words = {s: _words(s.text) for s in sentences}
    by_place = {(s.number, s.index): s for s in sentences}
    limit = max(1.0, MAX_SUBJECT_WORD_SHARE * len(sentences))
    terms = {t for t in content_terms(question) if sum(t in w for w in words.values()) <= limit}
    named = {s: terms & _words(_label(s)) for s in sentences if s.row}

    def about(s: Sentence) -> bool:
        if s.row:  # no other row of its table names more of the subject ("hip pitch" over "pitch")
            outnamed = any(named[s] < named[o] for o in named if o.needs == s.needs)
            return not outnamed and bool(named[s] or terms & words[s])
        near = (by_place.get((s.number, s.index + step)) for step in (-1, 0, 1))
        return any(terms & words[n] for n in near if n is not None and not n.row)

    return [" ".join([by_place[p].text for p in s.needs if p in by_place] + [s.text]) for s in sentences if about(s)]


def _label(row: Sentence) -> str:
    return row.text.split(" | ", 1)[0]


def _words(text: str) -> set[str]:
    """The sentence's words, and the parts of identifiers: `max_linear_speed: 0.3` and `rosPort = 10000` are about
    speed and a port."""
    parts = (part.lower() for part in _IDENTIFIER_PART.findall(text))
    return term_set(text) | {stem(part) for part in parts if len(part) > 2}


def values_off_subject(answer: str, question: str, passages: list[Passage],
                       history: Sequence[dict] = ()) -> tuple[str, ...]:
    """The numbers (with units) of the answer that no sentence about the question's subject holds, nor the question
    read with the turn before it (`history`)."""
    subject = subject_sentences(question, passage_sentences(passages))
    return check_claims(answer, [*subject, follow_up_text(question, history)], names=False).unsupported
