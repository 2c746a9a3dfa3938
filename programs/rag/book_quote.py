"""`book_quote`: the one sentence of the passages that answers the question on its own, shown as the book's words
when the LM's reply is no answer.

Only a prose sentence that reads alone is quoted: not a code line, a heading, a table row, a list's lead-in, a
question, a link, or a sentence that points back to the one before it. It must hold most of the question's content
words, every name the question gives (a quote about Isaac ROS Visual SLAM does not say how ORB-SLAM3 compares with
it), what the question asks (the value it asks for, else the word it asks about: "Gazebo has its own transport
layer, separate from ROS 2." holds the names of "What is a ROS 2 parameter?" but no parameter), and words of its
own besides: a sentence made of the question's words restates it ("The teaching robot is called Quillon." for "How
tall is Quillon the teaching robot?") without answering it. A bare name ("Quillon") does not say what it asks, and
gets no quote. The passages' best sentences run together (the old fallback) showed a code comment, a docstring, a
link or a chapter title as the answer, wrong 5 times in 6 on hidden questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from programs.refusal.asked_value import asked_value
from programs.text.passage_sentences import Sentence, scored_sentences
from programs.text.query_terms import asked_term, content_terms, name_terms, same_root, term_set, words_found
from retrievers.passage import Passage

MIN_QUOTE_WORDS = 5
MIN_QUESTION_WORDS_QUOTED = 0.5  # share of the question's content words the sentence holds
MIN_WORDS_OF_ITS_OWN = 2  # content words the question does not have
_LINK = re.compile(r"\]\(|(?i:https?://|\bwww\.)|<[a-z/]")  # a scheme or host is written in any case


@dataclass(frozen=True)
class BookQuote:
    text: str
    number: int  # the 1-based passage it is quoted from


def book_quote(question: str, passages: list[Passage]) -> BookQuote | None:
    """The best-scoring quotable sentence, or None when no sentence answers the question on its own."""
    scores = scored_sentences(question, passages)
    asked = set(content_terms(question))
    quotable = [s for s in scores if scores[s] > 0 and reads_alone(s)
                and len(set(content_terms(s.text)) - asked) >= MIN_WORDS_OF_ITS_OWN]
    if not quotable:
        return None
    best = max(quotable, key=scores.__getitem__)
    return BookQuote(best.text, best.number) if _holds_what_is_asked(question, best.text) else None


def _holds_what_is_asked(question: str, text: str) -> bool:
    """Whether `text` holds most of the question's content words, every name it gives, and what it asks: the value
    it asks for, else the word it asks about."""
    asked, value, terms = asked_term(question), asked_value(question), term_set(text)
    if (asked is None or words_found(question, [text]) < MIN_QUESTION_WORDS_QUOTED
            or not set(name_terms(question)) <= terms):
        return False
    return value.answered_by(text) if value else any(same_root(asked, term) for term in terms)


def quoted(text: str) -> str:
    """The answer a quote is shown as: the book's words, marked as such."""
    return f"The book says: \u201c{text}\u201d"


def reads_alone(sentence: Sentence) -> bool:
    """A prose sentence, complete, that needs no other unit to be understood."""
    text = sentence.text
    return (not sentence.code and not sentence.row and not sentence.needs and not sentence.marker
            and text.endswith((".", "!")) and len(text.split()) >= MIN_QUOTE_WORDS and not _LINK.search(text))
