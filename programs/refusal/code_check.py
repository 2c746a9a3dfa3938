"""Whether the commands, flags, paths and code identifiers an answer states occur in the retrieved passages.

A small model asked how to fix an error writes a plausible `pip install <package>`, or combines two real commands
into one that no page shows (a subcommand given another subcommand's flag). Numbers and names are checked by
`claim_check`; code is checked here, because its words are lower case and common (`install`, `run`, `--open`).

A code claim is a span in backticks, or a word that is written like code: a flag (`--reload`), a path or file
(`/items/`, `main.py`), a dotted or called name (`app.get`, `Depends()`), a snake_case identifier. It is supported
when it occurs in a passage as written, or when its words occur in order in one line or sentence of a passage
(`Query(max_length=50)` is in `q: str = Query(default=None, max_length=50)`).
"""

from __future__ import annotations

import re

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CODE_WORD = re.compile(
    r"(?<![\w-])(?:--?[a-zA-Z][\w-]*"  # a flag
    r"|[\w.-]*/[\w./{}:-]*[\w}/]"  # a path or route
    r"|[A-Za-z_][\w-]+(?:\.[A-Za-z_][\w-]*)*\.[A-Za-z_][\w-]+(?:\(\))?"  # a dotted name or file ("e.g." is not)
    r"|[A-Za-z_]\w*\(\)"  # a call
    r"|[a-z]\w*_\w+)"  # snake_case
)
_WORD = re.compile(r"[\w-]+")
_UNIT_RATIO = re.compile(r"[a-zA-Zµ°]{1,4}/[a-zA-Z]{1,4}[²³2]?")  # m/s, rad/s, km/h: units, not paths
_UNIT = re.compile(r"\n|(?<=[.!?])\s+")


def code_claims(answer: str) -> list[str]:
    """The code an answer states: its backticked spans, then the code-like words outside them."""
    spans = [span.strip() for span in _CODE_SPAN.findall(answer)]
    prose = _CODE_SPAN.sub(" ", answer)
    words = [word.rstrip(".") for word in _CODE_WORD.findall(prose) if not _UNIT_RATIO.fullmatch(word)]
    return list(dict.fromkeys(claim for claim in (*spans, *words) if claim and _WORD.search(claim)))


def unsupported_code(answer: str, passages: list[str]) -> list[str]:
    """The code claims of `answer` that no passage supports (see the module docstring)."""
    texts = [_plain(text) for text in passages]
    units = [_WORD.findall(_plain(unit)) for text in passages for unit in _UNIT.split(text)]
    missing = []
    for claim in code_claims(answer):
        written = _plain(claim)
        words = _WORD.findall(written)
        if not any(written in text for text in texts) and not any(_in_order(words, unit) for unit in units):
            missing.append(claim)
    return missing


def _in_order(words: list[str], unit: list[str]) -> bool:
    """Whether `words` occur in `unit` in this order, other words allowed between them."""
    remaining = iter(unit)
    return all(word in remaining for word in words)


def _plain(text: str) -> str:
    """Lower case, backticks gone, runs of spaces as one."""
    return " ".join(text.replace("`", "").lower().split())
