"""Which training targets a run of limited length learns from: every kind of question in turn, so the rarer kinds
(paraphrases, multi-part, follow-ups: the reader's own words) are not drowned by the common ones, and refusals in
proportion, the near-miss ones (an answerable question whose passages lack its facts: what the gate cannot catch) and
the distractor ones (its passages with the facts left out) as many as the must-refuse ones. Seeded: the same targets
give the same choice."""

from __future__ import annotations

import random
from collections import defaultdict

REFUSAL_SHARE = 0.3  # of a limited run's targets: enough to keep refusing, too few to teach refusing answerable ones
# The targets that teach the refusal: near-miss (the passages lack the facts), distractors (the passages holding them
# left out) and must-refuse, in that order: the first is taken first when they cannot be even.
REFUSAL_SOURCES = ("missing", "distractors", "refusal")


def choose_targets(targets: list, limit: int | None, seed: int) -> list:
    """At most `limit` of `targets` (ReaderTarget-like: .source and .style), in their own order; all when they fit."""
    if limit is None or len(targets) <= limit:
        return targets
    rng = random.Random(f"{seed}:choice")
    refusals = [t for t in targets if t.source in REFUSAL_SOURCES]
    answers = [t for t in targets if t.source not in REFUSAL_SOURCES]
    n_refusals = min(len(refusals), max(limit - len(answers), round(limit * REFUSAL_SHARE)))
    chosen = {id(t) for t in [*_in_turn(refusals, lambda t: REFUSAL_SOURCES.index(t.source), n_refusals, rng),
                              *_in_turn(answers, lambda t: t.style, limit - n_refusals, rng)]}
    return [t for t in targets if id(t) in chosen]


def _in_turn(targets: list, kind, n: int, rng: random.Random) -> list:
    """`n` targets taken one of each kind in turn (each kind in a seeded order), until a kind runs out."""
    groups = defaultdict(list)
    for t in targets:
        groups[kind(t)].append(t)
    queues = [rng.sample(group, len(group)) for _, group in sorted(groups.items(), key=lambda kv: str(kv[0]))]
    taken = []
    while len(taken) < n:
        for queue in queues:
            if queue and len(taken) < n:
                taken.append(queue.pop())
    return taken
