"""The sentences of retrieved passages, scored against a question: what the extractive answerer quotes and what
the LM's context is made of.

A unit is a sentence, list item, table row or code line. Its score is the question's content words it contains,
weighted by how rare each word is among the candidates, over the square root of its length, with a small
preference for higher-ranked passages. A unit that cannot be read alone names the units it needs: a sentence
announcing a list (`The states are:`) its items, a table row the table's header, a sentence that points back
(`It rejects...`, `...for exactly this reason.`) the sentence before it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from programs.text.query_terms import content_terms, term_set
from retrievers.markdown.fences import FENCE, QUOTE_MARKERS, with_quoted_code_state
from retrievers.passage import Passage

_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(\[])")
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+\.|#+|>)\s+|\*\*|__|`")
_TABLE_RULER = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+\.)\s+\S")
_COMMENT = re.compile(r"^(?:#(?!include|!)|//|--\s)")  # a code line that is a comment (not a C include or shebang)
# A sentence that starts with a pronoun or a connective, or names "this reason", says little without the one before.
_POINTS_BACK = re.compile(r"^(?:it|its|they|their|this|these|that|those|such|so|thus|hence|therefore)\b"
                          r"|\bthis reason\b", re.IGNORECASE)
# Fewer words than this read as fragments (a heading's echo, a lone brace); a list item is read whatever its length
# ("- Fast DDS"), since a list's lead-in needs its items.
MIN_SENTENCE_WORDS, MIN_CODE_WORDS = 3, 2
# Measured on the train and dev questions of book A and the bundled book (benchmarks/offline_quality.py):
QUESTION_WEIGHT = 0.3  # a question in the book (review exercises) shares the words but never holds the answer
CODE_WEIGHT = 0.5  # code lines hold commands and values, but prose explains better when it matches as well
LIST_ITEMS = 4  # items that come with a sentence announcing a list (`The states are:`)


@dataclass(frozen=True)
class Sentence:
    number: int  # 1-based passage number
    index: int  # position in its passage
    text: str
    code: bool
    needs: tuple[tuple[int, int], ...] = ()  # (number, index) of the units it cannot be read without
    row: bool = False  # a table row under its header (the one unit it needs)
    marker: str = ""  # a list item's first sentence: "- " or "3. "

    @property
    def line(self) -> str:
        """The unit as the LM reads it: a list item keeps its marker, so items read as a list."""
        return self.marker + self.text

    @property
    def lead_in(self) -> bool:
        return self.text.endswith(":")


def passage_sentences(passages: list[Passage]) -> list[Sentence]:
    return [sentence for number, passage in enumerate(passages, start=1) for sentence in _units(number, passage.text)]


def scored_sentences(question: str, passages: list[Passage]) -> dict[Sentence, float]:
    """Every sentence of the passages with its score against the question (empty when either has no words)."""
    terms = content_terms(question)
    sentences = passage_sentences(passages)
    if not sentences or not terms:
        return {}
    words = {s: term_set(s.text) for s in sentences}
    idf = {t: math.log(1 + len(sentences) / (1 + sum(t in ws for ws in words.values()))) for t in terms}

    def score(s: Sentence) -> float:
        matched = sum(idf[t] for t in terms if t in words[s])
        weight = (QUESTION_WEIGHT if s.text.endswith("?") else 1.0) * (CODE_WEIGHT if s.code else 1.0)
        return weight * matched / math.sqrt(max(8, len(s.text.split()))) * (1.0 - 0.05 * (s.number - 1))

    return {s: score(s) for s in sentences}


def _units(number: int, text: str) -> list[Sentence]:
    """The sentences, list items, table rows and code lines (fenced or indented, in a blockquote or not) of passage
    `number`, without Markdown markup; fences and table rulers dropped. A lead-in needs the items after it, a table
    row its table's header."""
    units: list[Sentence] = []
    header, in_list, lead = None, False, None
    lines = text.split("\n")
    for at, (body, in_code) in enumerate(with_quoted_code_state(lines)):
        if in_code and FENCE.match(body):
            continue
        stripped, columns = body.strip(), body.expandtabs(4)
        indent = len(columns) - len(columns.lstrip())
        if in_code or (stripped and indent >= 4 and not in_list):  # a list's paragraphs are indented, not code
            if len(stripped.split()) >= MIN_CODE_WORDS:
                units.append(Sentence(number, len(units), stripped, True))
            continue
        if _is_ruler(body):
            continue
        ruled = at + 1 < len(lines) and _is_ruler(lines[at + 1])  # a table's header, its rows' bars optional
        if stripped.startswith("|") or ("|" in stripped and (header is not None or ruled)):
            row = " | ".join(cell.strip() for cell in stripped.strip("|").split("|"))
            if header is None:
                header = len(units)
                units.append(Sentence(number, header, _MARKUP.sub("", row).strip(), False))
            else:
                units.append(Sentence(number, len(units), _MARKUP.sub("", row).strip(), False, ((number, header),),
                                      row=True))
            continue
        header = None
        if not stripped:
            continue
        item = _LIST_ITEM.match(stripped)
        if item and not in_list:  # a list's items need the sentence that announces it (`The states are:`)
            lead = units[-1] if units and not units[-1].code and units[-1].lead_in else None
        in_list = bool(item) or (in_list and indent > 0)  # an unindented line after a list ends it
        needs = ((number, lead.index),) if item and lead is not None else ()
        marker = _item_marker(item)
        # The marker goes before the line is split: "1. **Gantry.** Run ..." is one item, not "1.", "Gantry." and
        # a sentence.
        for piece in _joined_fragments(_UNIT_SPLIT.split(_MARKUP.sub("", stripped))):
            piece = _MARKUP.sub("", piece).strip()
            if len(piece.split()) >= (1 if item else MIN_SENTENCE_WORDS):
                units.append(Sentence(number, len(units), piece, False, needs, marker=marker))
                marker = ""
    units = [_with_items(u, units) if u.lead_in and not u.code else _with_antecedent(u, units) for u in units]
    return [_with_code_comment(u, units) if u.code else u for u in units]


def _is_ruler(line: str) -> bool:
    """A table's ruler (`|---|:--:|`, `--- | ---`); a rule (`---`) has no `|`."""
    body = QUOTE_MARKERS.sub("", line).strip()
    return "|" in body and bool(_TABLE_RULER.match(body))


def _item_marker(item: re.Match | None) -> str:
    """"- " for a bullet (`*` and `+` read as `-`), "3. " for a numbered item, "" for a line that is no item."""
    if item is None:
        return ""
    return ("-" if item.group(1) in "-*+" else item.group(1)) + " "


def _joined_fragments(pieces: list[str]) -> list[str]:
    """A piece too short to be read alone (a bold label such as "Gantry.", "Note:") joins the piece after it."""
    joined: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        if len(_MARKUP.sub("", piece).split()) < MIN_SENTENCE_WORDS:
            carry = piece
            continue
        joined.append(piece)
        carry = ""
    if carry:
        joined.append(carry)  # a short line of its own ("- Fast DDS") stays, for a list item
    return joined


def _with_code_comment(unit: Sentence, units: list[Sentence]) -> Sentence:
    """A code comment and the code line after it are read together: the comment says what the line does
    (`# start the world running immediately` above `gz sim -r kestrel_lab.sdf`)."""
    before = units[unit.index - 1] if unit.index > 0 else None
    after = units[unit.index + 1] if unit.index + 1 < len(units) else None
    if _COMMENT.match(unit.text) and after is not None and after.code and not _COMMENT.match(after.text):
        return replace(unit, needs=(*unit.needs, (unit.number, after.index)))
    if not _COMMENT.match(unit.text) and before is not None and before.code and _COMMENT.match(before.text):
        return replace(unit, needs=((unit.number, before.index), *unit.needs))
    return unit


def _with_antecedent(unit: Sentence, units: list[Sentence]) -> Sentence:
    """A prose sentence that points back needs the unit before it: a sentence, or the code line it explains."""
    if unit.code or unit.index == 0 or not _POINTS_BACK.search(unit.text):
        return unit
    return replace(unit, needs=((unit.number, unit.index - 1), *unit.needs))


def _with_items(lead_in: Sentence, units: list[Sentence]) -> Sentence:
    items = tuple((u.number, u.index) for u in units[lead_in.index + 1: lead_in.index + 1 + LIST_ITEMS])
    return replace(lead_in, needs=lead_in.needs + items)
