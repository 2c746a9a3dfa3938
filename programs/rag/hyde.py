"""HyDE (hypothetical document embeddings, Gao et al. 2022): search with a passage the LM imagines as the answer.

A question and the passage that answers it are worded differently; a made-up answer passage is worded like the
book, so it can land nearer the real one. Its facts may be wrong: it is only searched with, never shown. BookRAG
searches for the question and for the passage and interleaves the two rankings.
"""

from __future__ import annotations

import logging

import dspy
from dspy.utils.exceptions import AdapterParseError

log = logging.getLogger(__name__)


class HypotheticalPassage(dspy.Signature):
    """Write the short passage of a technical book that would answer the question: two to four sentences, in
    the terms such a book would use. If you are unsure of the facts, write a plausible passage anyway: it is
    only used to search the book and is never shown to the reader."""

    question: str = dspy.InputField()
    passage: str = dspy.OutputField()


class HyDE(dspy.Module):
    def __init__(self):
        super().__init__()
        self.write = dspy.Predict(HypotheticalPassage)

    def forward(self, question: str) -> list[str]:
        """The queries to search for: the question, then the hypothetical passage."""
        try:
            passage = self.write(question=question).passage
        except AdapterParseError:  # a search aid, not the answer: without it, search for the question alone
            log.warning("HyDE: the LM's reply had no passage; searching with the question alone")
            return [question]
        return [question, passage.strip()] if passage and passage.strip() else [question]
