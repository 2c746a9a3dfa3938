"""Content words of a question, the unit the refusal gate and the extractive answerer both count."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")
_PARTS = re.compile(r"[./]+")
_CASED_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]|[A-Za-z0-9]")
_SENTENCE_END = ".!?:\"'"
_CLITIC = re.compile(r"(?<=\w)(?:n['’]t|['’](?:s|re|ve|ll|d|m))\b")  # "Quillon's", "don't"
_QUESTION_WORDS = frozenset(["what", "which", "who", "whom", "whose", "where", "when", "why", "how"])
_MODALS = frozenset(["must", "may", "might", "shall"])  # not stop words, but no word a question asks about
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "explain", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "use", "used", "uses", "using", "very", "was", "way", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "tell", "describe", "mean", "means", "give", "list", "name", "kind", "type", "role", "happen", "happens", "work", "works", "get", "called", "book", "chapter", "section"]
)


def stem(word: str) -> str:
    """A deliberately crude stemmer: plural and common verb endings only, so `sensors` meets `sensor`; and
    `best_effort` meets `best-effort`."""
    word = word.replace("_", "-")
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_terms(text: str) -> list[str]:
    """Stemmed, de-duplicated content words in order of appearance."""
    return list(dict.fromkeys(stem(w) for w in _WORD.findall(text.lower()) if _is_content(w)))


def name_terms(text: str) -> list[str]:
    """The content words written like names: mixed or upper case (`MuJoCo`, `VRAM`), with a digit or underscore
    (`VLP-16`, `slam_toolbox`), or capitalized mid-sentence (`Jazzy`). A book that never uses such a word almost
    never answers the question; a missing common word (`drawbacks`) says much less."""
    names, end = [], 0
    for match in _CASED_WORD.finditer(text):
        # What stands between the previous word and this one decides a sentence start: only that gap is read, so a
        # long text is read once (the text before each word, sliced anew, made a 10 MB question run for minutes).
        word, gap = match.group(), text[end: match.start()].rstrip()
        sentence_start = gap[-1] in _SENTENCE_END if gap else end == 0
        end = match.end()
        looks_named = (any(c.isdigit() or c == "_" for c in word) or any(c.isupper() for c in word[1:])
                       or (word[0].isupper() and not sentence_start))
        if looks_named and _is_content(word.lower()):
            names.append(stem(word.lower()))
    return list(dict.fromkeys(names))


def asked_term(question: str) -> str | None:
    """The stemmed word a question asks about: in the first run of content words after its question word (or its
    first run), the last that is no name ("parameter" in "What is a ROS 2 parameter?", "topic" in "What is a topic
    in ROS 2?"), else the name ("What is Gazebo?"); right after `who`, the verb ("supply" in "Who supplies
    Quillon's bumper?"). None for a question that is that run alone ("Quillon"): it does not say what it asks."""
    words = _WORD.findall(_CLITIC.sub("", question).lower())  # "Quillon's bumper" is one phrase
    asks = [at for at, word in enumerate(words) if _in_run(word)]
    if not asks:
        return None
    wh = next((at for at, word in enumerate(words) if word in _QUESTION_WORDS), len(words))
    start = next((at for at in asks if at > wh), asks[0])
    end = next((at for at in range(start, len(words)) if not _in_run(words[at])), len(words))
    if start == 0 and end == len(words):
        return None
    run = [stem(word) for word in words[start:end]]
    if start > 0 and words[start - 1] == "who":  # who asks for the one who does it: the verb is what is asked
        return run[0]
    names = set(name_terms(question))
    return next((term for term in reversed(run) if term not in names), run[-1])


def _in_run(word: str) -> bool:
    return _is_content(word) and word not in _MODALS


def same_root(a: str, b: str) -> bool:
    """Whether two stemmed words share a root `stem` leaves apart: the shorter, less a final e or y, begins the
    longer ("supply" and "supplier", "control" and "controller"); words under 4 letters only when equal."""
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= 4 and long.startswith(short[:-1] if short[-1] in "ey" else short))


def _is_content(word: str) -> bool:
    return word not in STOPWORDS and (len(word) > 2 or word.isdigit())


def term_set(text: str) -> set[str]:
    """Every stemmed word of a text, and the parts of paths and dotted names (`/kestrel/walk_to` holds
    `walk_to`), so a question naming the part finds it."""
    words = _WORD.findall(text.lower())
    parts = (part for w in words if "/" in w or "." in w for part in _PARTS.split(w))
    return {stem(w) for w in (*words, *parts) if w}


def words_found(question: str, texts: list[str]) -> float:
    """The share of the question's content words that some text holds (1.0 for a question with none)."""
    terms = content_terms(question)
    if not terms:
        return 1.0
    held = set().union(*map(term_set, texts)) if texts else set()
    return sum(t in held for t in terms) / len(terms)
