"""A limited training run learns from every kind of question in turn, with refusals in proportion."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from programs.compile.example_choice import REFUSAL_SHARE, choose_targets


@dataclass(frozen=True)
class Target:
    id: str
    source: str
    style: str = ""


def targets(**counts: int) -> list[Target]:
    """`source_style=n`: n targets of that source and style."""
    made = []
    for key, n in counts.items():
        source, _, style = key.partition("_")
        made += [Target(f"{key}-{i}", source, style) for i in range(n)]
    return made


def test_all_of_them_when_they_fit_or_there_is_no_limit():
    written = targets(reference_factual=5, refusal=3)
    assert choose_targets(written, 8, 0) == written
    assert choose_targets(written, None, 0) == written


def test_refusals_take_their_share_near_misses_as_many_as_must_refuse():
    written = targets(reference_factual=200, missing=60, refusal=150)
    chosen = choose_targets(written, 100, 0)
    sources = Counter(t.source for t in chosen)
    assert len(chosen) == 100
    assert sources["missing"] + sources["refusal"] == round(100 * REFUSAL_SHARE)
    assert sources["missing"] == sources["refusal"] == 15


def test_rare_kinds_of_question_are_not_drowned():
    """Each kind in turn: 10 paraphrases of 310 answerable targets are all kept in a choice of 70 answers."""
    written = targets(reference_factual=300, reference_paraphrase=10, refusal=100)
    chosen = choose_targets(written, 100, 0)
    styles = Counter(t.style for t in chosen if t.source == "reference")
    assert styles == {"paraphrase": 10, "factual": 60}


def test_refusals_fill_what_answers_cannot():
    written = targets(reference_factual=20, refusal=100)
    chosen = choose_targets(written, 50, 0)
    assert Counter(t.source for t in chosen) == {"reference": 20, "refusal": 30}


def test_seeded_and_in_the_written_order():
    written = targets(reference_factual=50, reference_howto=50, missing=40, refusal=40)
    first, again, other = (choose_targets(written, 60, seed) for seed in (0, 0, 1))
    assert first == again and first != other
    assert first == [t for t in written if t in first]
