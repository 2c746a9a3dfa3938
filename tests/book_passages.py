"""Hand-built retrieved passages for the tests of what is read from them (context, extractive answers)."""

from __future__ import annotations

from retrievers.passage import Passage


def passage(text: str, n: int = 0) -> Passage:
    """The n-th retrieved passage (0 is the best scored), from the file `n.md`."""
    return Passage(id=f"p{n}", score=1.0 - 0.1 * n, text=text, title="Book", heading="", module="",
                   source=f"{n}.md", url="")
