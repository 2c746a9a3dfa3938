"""The kind of value a question asks for (a price, a number, a date, a version) and what such a value looks like.

A near-miss question shares the book's topic words but asks for a value the book never gives ("What is the retail
price of a Kestrel?"). The refusal gate looks for a sentence that holds a value of the asked kind next to the
question's words; a book that never states the value has no such sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from programs.refusal.quantity_kinds import accepted_kinds, states_kind
from programs.text.query_terms import stem

_HOW = "many|much|long|far|fast|heavy|tall|big|large|high|wide|often|old"
_QUANTITY = ("number|mass|weight|size|capacity|rate|ratio|frequency|voltage|current|torque|speed|length|height|"
             "resolution|range|limit|duration|distance|value|count|amount|angle|temperature|percentage|latency|power|"
             "draw|memory|bandwidth|force|gain|threshold|timeout|period|interval|depth|width|accuracy")
_EXTREME = "maximum|minimum|largest|smallest|tallest|heaviest|fastest|lowest|highest|peak"
_QUANTITY_WORDS = frozenset(_HOW.split("|") + _QUANTITY.split("|"))
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")  # a compound ("force-torque sensor") names no quantity
_WORD_TAIL = re.compile(r"[\w-]*")


@dataclass(frozen=True)
class AskedValue:
    kind: str  # money, number, date, version
    value: re.Pattern  # how a value of this kind is written in a book
    words: frozenset[str]  # stemmed question words naming the value itself ("weigh", "price"): a value stands for them
    # The kinds of quantity the question names ("gear ratio": ratio; quantity_kinds.py); None: any kind
    quantities: frozenset[str] | None = None

    def held_by(self, text: str) -> bool:
        return bool(self.value.search(text))

    def answered_by(self, text: str) -> bool:
        """Whether `text` states a value of the asked kind, and of the asked quantity where the question names one:
        "0.012 kg·m²" is a number, but no gear ratio."""
        return self.held_by(text) and (self.quantities is None or states_kind(text, self.quantities))


def _value(kind: str, pattern: str, words: set[str]) -> AskedValue:
    return AskedValue(kind, re.compile(pattern, re.IGNORECASE), frozenset(stem(w) for w in words))


_KINDS = (  # first match wins: "How much does it cost?" asks for money, not for any number
    (re.compile(r"\b(?:price[sd]?|cost|costs|fees?|dollars?)\b", re.IGNORECASE),
     _value("money", r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:usd|eur|dollars?|euros?)\b|\b(?:usd|eur)\s?\d",
            {"price", "cost", "fee", "dollar", "much", "pay"})),
    (re.compile(rf"\bhow (?:{_HOW})\b|\b(?:what|which) (?:[\w-]+ ){{0,3}}(?:{_QUANTITY})\b|\b(?:{_EXTREME})\b",
                re.IGNORECASE),
     _value("number", r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|thousand|"
                      r"million|billion|dozen)\b", {*_HOW.split("|"), "weigh", "weight", "mass"})),
    (re.compile(r"\b(?:what|which) (?:year|date|month)\b|\bwhen (?:was|were|did|will)\b|\bend[- ]of[- ]life\b|"
                r"\brelease date\b", re.IGNORECASE),
     _value("date", r"\b(?:19|20)\d\d\b|\b(?:january|february|march|april|may|june|july|august|september|"
                    r"october|november|december)\b", {"year", "date", "month"})),
    (re.compile(r"\b(?:what|which) (?:[\w-]+ ){0,2}(?:version|release)\b|\bversion of\b", re.IGNORECASE),
     _value("version", r"\b\d+(?:\.\d+)+\b|\bv\d+\b|\b(?:19|20)\d\d\b", {"version", "release"})),
)


def asked_value(question: str) -> AskedValue | None:
    """The kind of value the question asks for, or None (a how-to, why or what-is question)."""
    for asks, value in _KINDS:
        if phrases := [_whole_words(question, found) for found in asks.finditer(question)]:
            # the quantity words of every phrase asking for it ("how tall ... and how heavy")
            named = _QUANTITY_WORDS.intersection(w for phrase in phrases for w in _WORD.findall(phrase.lower()))
            return replace(value, quantities=accepted_kinds(named))
    return None


def _whole_words(question: str, found: re.Match) -> str:
    """The phrase `found` in `question`, to the end of its last word: "force" of "force-torque" is not the word."""
    return question[found.start(): _WORD_TAIL.match(question, found.end()).end()]
