"""Query expansion for multi-part questions: search for each part as well as for the whole question.

"Which port does the endpoint listen on, and which package bridges Gazebo topics?" asks two things that often
live in two chapters; one search for the whole question tends to find only one of them. `QuestionParts` turns
the question into [question, part 1, part 2, ...]: by the `SplitQuestion` predictor when a hosted LM is
configured, by a small rule otherwise (a second prompt would evict the local model's cached prompt prefix).
BookRAG searches for each and `interleave`s the rankings.
"""

from __future__ import annotations

import re

import dspy

from programs.lm.language_model import lm_mode
from retrievers.passage import Passage

MAX_PARTS = 4
# A new question starts where "and" (or "?", or ";") is followed by a question word: "..., and which package
# ...?". "RELIABLE and BEST_EFFORT" or "step length and the separation" are not split.
_QUESTION_WORD = r"(?:(?:at|in|on|from|to|for|by|with|of)\s+)?(?:what|which|how|why|where|when|who|whose)\b"
_BOUNDARY = re.compile(rf"(?:\?|[,;]?\s+and|;)\s+(?={_QUESTION_WORD})", re.IGNORECASE)
_MIN_PART_WORDS = 3  # "and why?" is not a question of its own


class SplitQuestion(dspy.Signature):
    """Split a question that asks several things into standalone sub-questions, one per thing asked, each
    understandable on its own (repeat the subject instead of "it" or "its"). A question that asks one thing is
    returned unchanged as the only part. Do not answer the question and do not add new questions."""

    question: str = dspy.InputField()
    parts: list[str] = dspy.OutputField(desc=f"1 to {MAX_PARTS} sub-questions")


def split_question(question: str) -> list[str]:
    """The rule: split at "..., and <question word>" (or "? <question word>"); [] when there is one part."""
    parts = [part.strip(" ,;?") for part in _BOUNDARY.split(question)]
    if len(parts) < 2 or any(len(part.split()) < _MIN_PART_WORDS for part in parts):
        return []
    return [f"{part[0].upper()}{part[1:]}?" for part in parts[:MAX_PARTS]]


class QuestionParts(dspy.Module):
    def __init__(self):
        super().__init__()
        self.split = dspy.Predict(SplitQuestion)

    def forward(self, question: str) -> list[str]:
        """The queries to search for: the question itself first, then its parts if it has more than one."""
        lm = dspy.settings.lm
        if lm is not None and lm_mode(lm) == "hosted":
            parts = [p.strip() for p in self.split(question=question).parts or [] if p and p.strip()]
        else:
            parts = split_question(question)
        parts = [p for p in parts if p != question][:MAX_PARTS]
        return [question, *parts] if len(parts) > 1 else [question]


def interleave(rankings: list[list[Passage]], k: int) -> list[Passage]:
    """Round-robin over the rankings (first of each, then second of each, ...), without duplicates, k at most.

    Each query's best passage gets in before any query's second best: what a multi-part question needs (one
    passage per part) and what score fusion does not promise (measured in benchmarks/query_expansion.py).
    """
    merged: dict[str, Passage] = {}
    for rank in range(max(map(len, rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                merged.setdefault(ranking[rank].id, ranking[rank])
    return list(merged.values())[:k]
