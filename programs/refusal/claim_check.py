"""Whether an answer's central claims (numbers with their units, versions, names) occur in the passages it cites.

A near-miss question shares the book's topic words but asks for something the book never states; a model that
answers it anyway, from memory, writes a number or a name that no cited passage holds. This check needs no LM. It
tolerates formatting: "1.2 m" = "1.2m" = "1.2 metres", "10,000" = "10000", "24 kg" = "24 kilograms".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from programs.text.query_terms import name_terms, term_set

# A number, then optionally a unit word right after it. Thousands separators only in groups of three ("10,000").
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)(?:(\s?)([a-zA-Zµ°%][\w/²³·°]*))?")
_CITATION = re.compile(r"\[\d+(?:\s*[,;]\s*\d+)*\]")  # "[2]", "[1, 3]": passage numbers, not claims
_LIST_NUMBER = re.compile(r"^\s*\d+[.)]\s", re.MULTILINE)
_UNITS = {
    "m": ("m", "meter", "meters", "metre", "metres"), "cm": ("cm", "centimeter", "centimeters", "centimetre",
                                                            "centimetres"),
    "mm": ("mm", "millimeter", "millimeters", "millimetre", "millimetres"), "km": ("km", "kilometer", "kilometers"),
    "kg": ("kg", "kgs", "kilogram", "kilograms"), "g": ("g", "gram", "grams"), "lb": ("lb", "lbs", "pound", "pounds"),
    "s": ("s", "sec", "secs", "second", "seconds"), "ms": ("ms", "msec", "millisecond", "milliseconds"),
    "min": ("min", "mins", "minute", "minutes"), "h": ("h", "hr", "hrs", "hour", "hours"),
    "hz": ("hz", "hertz"), "khz": ("khz",), "%": ("%", "percent"), "deg": ("°", "deg", "degree", "degrees"),
    "v": ("v", "volt", "volts"), "w": ("w", "watt", "watts"), "a": ("amp", "amps", "ampere", "amperes"),
    "n": ("n", "newton", "newtons"), "nm": ("nm", "n·m", "newton-meters"), "gb": ("gb", "gigabyte", "gigabytes"),
    "mb": ("mb", "megabyte", "megabytes"), "tb": ("tb", "terabyte", "terabytes"), "fps": ("fps",),
    "x": ("x", "times"), "m/s": ("m/s",), "rad/s": ("rad/s",), "m/s²": ("m/s²", "m/s2"), "kg·m²": ("kg·m²", "kg·m2"),
    "mah": ("mah",),
}
_UNIT = {spelling: unit for unit, spellings in _UNITS.items() for spelling in spellings}
# A bare number right after a capitalized word numbers a name ("Module 1", "ROS 2", "Step 3"): it is no quantity.
_NAME_BEFORE = re.compile(r"\b[A-Z][A-Za-z]* $")
NAME_NUMBER = "#"  # the unit of such a number: it holds no claim with a unit ("1 kg")


@dataclass(frozen=True)
class ClaimCheck:
    claims: tuple[str, ...]  # the numbers (with units) and names the answer states
    unsupported: tuple[str, ...]  # those no cited passage holds

    @property
    def supported(self) -> bool:
        return not self.unsupported


def check_claims(answer: str, passages: Iterable[str], names: bool = True, question: str = "") -> ClaimCheck:
    """Which of the answer's numbers and (with `names`) names occur in `passages` (the texts it cites). A name the
    question uses is no claim of the answer's: it echoes what was asked ("the docs UIs")."""
    evidence = " ".join(passages)
    stated = _LIST_NUMBER.sub(" ", _CITATION.sub(" ", answer))
    numbers_in_evidence = set(_numbers(evidence))
    names_in_evidence = term_set(evidence) | term_set(question)
    claims, unsupported = [], []
    for value, unit in dict.fromkeys(_numbers(stated)):
        claims.append(f"{value} {unit}" if unit not in (None, NAME_NUMBER) else value)
        # A unit the passage leaves out (`max_step_length: 0.4` for "0.4 m") is not a contradiction; another unit is.
        if not ((value, unit) in numbers_in_evidence or (value, None) in numbers_in_evidence
                or (unit in (None, NAME_NUMBER) and any(v == value for v, _ in numbers_in_evidence))):
            unsupported.append(claims[-1])
    for name in name_terms(stated) if names else ():
        if name[0].isdigit():  # "1.2m", "24-kg": a number, checked above with its unit
            continue
        claims.append(name)
        if name not in names_in_evidence:
            unsupported.append(name)
    return ClaimCheck(tuple(claims), tuple(unsupported))


def _numbers(text: str) -> list[tuple[str, str | None]]:
    """(canonical value, canonical unit, NAME_NUMBER or None) of every quantity in the text."""
    found = []
    for match in _NUMBER.finditer(text):
        raw, space, word = match.group(1).replace(",", ""), match.group(2), (match.group(3) or "").lower()
        if word and not space and word not in _UNIT:  # "2D", "4K", "1st": a name or an ordinal, not a quantity
            continue
        unit = _UNIT.get(word)
        if unit is None and _NAME_BEFORE.search(text, max(0, match.start() - 40), match.start()):
            unit = NAME_NUMBER
        found.append((_canonical(raw), unit))
    return found


def _canonical(raw: str) -> str:
    """"1.20" and "1.2" are one value; a version with two dots or more ("2.2.0") is kept as written."""
    if raw.count(".") > 1:
        return raw
    try:
        return format(Decimal(raw).normalize(), "f")
    except InvalidOperation:
        return raw


def grounded_citations(answer: str, texts: list[str], citations: list[int], question: str = "") -> list[int] | None:
    """`citations` (1-based numbers into `texts`), with the passages added that hold what the cited ones do not;
    None when some claim of the answer is in no passage at all.

    A small model often states the right value and cites a neighbouring passage: the value came from the
    retrieved text, so the citation is repaired rather than the answer refused. A value no retrieved passage holds
    came from the model's memory, or was guessed for a near-miss question."""
    grounded = list(citations)
    missing = check_claims(answer, [texts[n - 1] for n in grounded], question=question).unsupported
    if not missing:
        return grounded
    if not check_claims(answer, texts, question=question).supported:
        return None
    for number in range(1, len(texts) + 1):  # in retrieval order: the best-ranked passage that helps first
        if number in grounded:
            continue
        fewer = check_claims(answer, [texts[n - 1] for n in (*grounded, number)], question=question).unsupported
        if len(fewer) < len(missing):
            grounded.append(number)
            missing = fewer
        if not missing:
            break
    return grounded
