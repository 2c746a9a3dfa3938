"""The sections nearest a question the book does not answer: where a reader would look next.

A refusal of a question about the book (`RefusalGate.about_the_book`) names them; they are no citations, since
nothing in them answers the question.
"""

from __future__ import annotations

from retrievers.passage import Passage, rank_key

NEAREST_SECTIONS = 2


def nearest_sections(passages: list[Passage], n: int = NEAREST_SECTIONS) -> list[Passage]:
    """The best retrieved passage of each of the first `n` sections (a page's heading: its URL), best first."""
    nearest: dict[str, Passage] = {}
    for passage in sorted(passages, key=rank_key):
        nearest.setdefault(passage.url or f"{passage.source}#{passage.heading}", passage)
    return list(nearest.values())[:n]
