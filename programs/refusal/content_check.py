"""Whether an answer's words come from the book or from the model's memory.

An answer from memory (a recipe, an API the book never shows) may carry no number or name for the claim check to
catch, and a citation makes it look grounded. Most of the words of a real answer come from the passages or the
question; an answer whose own content words mostly do not is invented.
"""

from __future__ import annotations

from programs.text.query_terms import content_terms, term_set

# Share of an answer's own content words (those not in the question) the retrieved passages must hold. Answers from
# memory are mostly new words; right answers that explain in the model's own words went as low as 0.35 on book A's
# dev split (0.5 refused four of them; no must-refuse answer on either dev split was under 1.0).
MIN_CONTENT_SUPPORT = 0.25
MIN_CONTENT_WORDS = 4  # fewer new words than this say too little to judge


def content_support(answer: str, question: str, passages: list[str]) -> float:
    """The share of the answer's content words not in the question that the passages hold (1.0 when too few)."""
    asked = set(content_terms(question))
    own = [term for term in content_terms(answer) if term not in asked]
    if len(own) < MIN_CONTENT_WORDS:
        return 1.0
    held = set().union(*(term_set(text) for text in passages)) if passages else set()
    return sum(term in held for term in own) / len(own)
