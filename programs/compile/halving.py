"""Successive halving: score every candidate on a seeded part of dev, drop those clearly worse than the best there or
no better than zero-shot, and score the rest of dev for the survivors only. With a local model every scored question
is an LM call of ~10-15 s, so each dropped candidate saves the rest of a dev pass.

"Clearly worse" is the selection rule turned around: the best candidate on the subset beats it outside noise
(programs/compile/selection.py). "No better than zero-shot" is futility: a candidate replaces zero-shot only with a
gain outside noise on all of dev, which one that has gained nothing on half of dev almost never shows. The first
candidate, zero-shot, is the fallback and is never dropped; when every other candidate is dropped, it is kept
without answering the rest of dev, and its figures cover the subset.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from bookrag.questions import Question
from programs.compile.candidates import Candidate
from programs.compile.selection import Comparison, SelectionRule, compare
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.reports import question_rows


@dataclass
class ScoredCandidate:
    candidate: Candidate
    program: object
    rows: list[QuestionRow]  # the subset's rows, then the rest's: the same question order for every candidate
    dropped: Comparison | None = None  # the comparison on the subset that dropped it: the best's win, or zero-shot's lead
    futile: bool = False  # dropped for gaining nothing over zero-shot on the subset

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def scores(self) -> list[float]:
        return [row.combined for row in self.rows]

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores)


def score_candidates(candidates: list[tuple[Candidate, object]], dev: list[Question], rule: SelectionRule,
                     progress: bool | None = None, *, say: Callable[[str], None]) -> list[ScoredCandidate]:
    """Every (candidate, program) scored on dev by successive halving, in the order given; the first is the fallback
    and is scored on all of dev unless every other candidate is dropped. A dropped candidate's rows cover the subset
    only."""
    subset, rest = dev_subset(dev, rule) if len(candidates) > 1 else (dev, [])
    part = "dev subset" if rest else "dev"
    scored = [ScoredCandidate(c, program, _rows(c, program, subset, part, progress)) for c, program in candidates]
    if not rest:
        return scored
    say(f"{part} ({len(subset)} of {len(dev)} questions): combined "
        + ", ".join(f"{s.name} {s.mean:.3f}" for s in scored))
    best = max(scored, key=lambda s: s.mean)  # ties: the simpler
    fallback = scored[0]
    for s in scored[1:]:
        comparison = compare(best.name, best.scores, s.name, s.scores, rule) if s is not best else None
        if comparison is not None and comparison.won:
            s.dropped = comparison
            say(f"dropped {s.name} after the dev subset ({comparison.describe(rule)})")
        elif s.mean <= fallback.mean:
            s.dropped, s.futile = compare(fallback.name, fallback.scores, s.name, s.scores, rule), True
            say(f"dropped {s.name} after the dev subset: no better than {fallback.name} there "
                f"({s.dropped.describe(rule)})")
    survivors = [s for s in scored if s.dropped is None]
    if survivors == [fallback]:  # nothing left to challenge zero-shot: the rest of dev would decide nothing
        say(f"every other candidate dropped: {fallback.name} kept without answering the rest of dev")
        return scored
    for s in survivors:
        s.rows += _rows(s.candidate, s.program, rest, "dev rest", progress)
    return scored


def dev_subset(dev: list[Question], rule: SelectionRule) -> tuple[list[Question], list[Question]]:
    """(subset, rest): `rule.subset_share` of the answerable and of the must-refuse questions, drawn with `rule.seed`
    (both kinds, so a candidate that refuses better or worse shows on the subset too), each in dev order."""
    chosen: set[int] = set()
    rng = random.Random(rule.seed)
    for answerable in (True, False):
        kind = [i for i, q in enumerate(dev) if q.answerable == answerable]
        chosen.update(rng.sample(kind, math.ceil(len(kind) * rule.subset_share)))
    return [q for i, q in enumerate(dev) if i in chosen], [q for i, q in enumerate(dev) if i not in chosen]


def _rows(candidate: Candidate, program, questions: list[Question], part: str,
          progress: bool | None) -> list[QuestionRow]:
    return question_rows(program, questions, progress, description=f"{part}: {candidate.description}")
