"""Content words of a question, the unit the refusal gate and the extractive answerer both count."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "explain", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "use", "used", "uses", "using", "very", "was", "way", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "tell", "describe", "mean", "means", "give", "list", "name", "kind", "type", "role", "happen", "happens", "work", "works", "get", "called", "book", "chapter", "section"]
)


def stem(word: str) -> str:
    """A deliberately crude stemmer: plural and common verb endings only, so `sensors` meets `sensor`."""
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_terms(text: str) -> list[str]:
    """Stemmed, de-duplicated content words in order of appearance."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and (len(word) > 2 or word.isdigit()):
            seen.setdefault(stem(word), None)
    return list(seen)


def term_set(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower())}
