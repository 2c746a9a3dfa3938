"""The bound on a question's length: every path to an answer (ask, evaluate, optimize) reads at most this much."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)
MAX_QUERY_WORDS = 500
MAX_QUERY_CHARS = 20 * MAX_QUERY_WORDS  # a question with few spaces (a pasted blob) is cut as well


def bounded_question(question: str) -> str:
    """`question`, or its first MAX_QUERY_WORDS words within MAX_QUERY_CHARS characters when it is longer: the work
    on a question grows with its length (a 10 MB question ran for minutes), and no book question needs more."""
    words = question.split(maxsplit=MAX_QUERY_WORDS)  # the first words, and the rest in one piece
    if len(words) <= MAX_QUERY_WORDS and len(question) <= MAX_QUERY_CHARS:
        return question
    cut = " ".join(words[:MAX_QUERY_WORDS])[:MAX_QUERY_CHARS]
    log.warning("the question is %d characters long; keeping the first %d words, at most %d characters",
                len(question), MAX_QUERY_WORDS, MAX_QUERY_CHARS)
    return cut
