"""The query-rewriting signature for multi-turn chat, and the rewrite that falls back when the reply holds none."""

import logging

import dspy
from dspy.utils.exceptions import AdapterParseError

log = logging.getLogger(__name__)


class RewriteQuery(dspy.Signature):
    """Rewrite the follow-up question as one standalone search query for the book, replacing pronouns and
    vague references with what they refer to in the conversation. Keep the book's terms; add nothing else."""

    history: str = dspy.InputField(desc="earlier turns of this conversation")
    question: str = dspy.InputField(desc="the follow-up question")
    standalone_query: str = dspy.OutputField()


def rewritten_query(rewrite: dspy.Predict, history: str, question: str) -> str | None:
    """`rewrite`'s standalone query for the follow-up `question`; None when the LM's reply holds none (the field
    missing, empty, or the reply unreadable), and the caller reads the follow-up with the previous turn instead,
    as with a local LM: a rewrite only sharpens retrieval, so a reply without one costs no answer.

    Call it with the adapter's parse errors let through (`BookRAG._lm(parse_errors=False)`)."""
    try:
        query = (rewrite(history=history, question=question).standalone_query or "").strip()
    except AdapterParseError:
        query = ""
    if not query:
        log.debug("the LM's rewrite of the follow-up %r has no standalone query; reading it with the previous turn",
                  question)
    return query or None
