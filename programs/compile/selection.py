"""Which program to keep: a candidate replaces a simpler one only when its gain on dev is more than noise.

A dev split holds 30-50 questions, so a compiled program can score a few hundredths above zero-shot just by which
questions happen to be in dev. `paired_bootstrap` resamples the dev questions (with replacement) and recomputes the
mean per-question gain in `combined_score` each time; a gain counts only when the lower end of that distribution is
above 0 (`SelectionRule.confidence`). `choose_candidate` walks the candidates simplest first, each challenging the
one kept so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class SelectionRule:
    """The parameters of choosing a program, in one place (docs/how-it-works.md, "Compiling")."""

    resamples: int = 2000
    # One-sided: a gain counts when its resampled means' (1 - confidence) quantile, the 5th percentile, is above 0.
    # 95% rather than 90%: up to two compiled candidates challenge zero-shot, and a false win costs demos in every
    # prompt of every later question.
    confidence: float = 0.95
    subset_share: float = 0.5  # successive halving: the share of dev every candidate is scored on first
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """`candidate`'s per-question combined scores against `baseline`'s on the same `n` questions."""

    candidate: str
    baseline: str
    n: int
    gain: float  # the mean paired difference, candidate - baseline
    low: float  # the (1 - confidence) quantile of the resampled mean gains
    high: float  # their `confidence` quantile
    won: bool  # low > 0: a gain outside what resampling the questions gives

    def describe(self, rule: SelectionRule) -> str:
        """`bootstrap-4: +0.060 combined over zero-shot on 49 questions, bootstrap 5th-95th percentile [...]`."""
        low_pct, high_pct = _percent(1 - rule.confidence), _percent(rule.confidence)
        return (f"{self.candidate}: {self.gain:+.3f} combined over {self.baseline} on {self.n} questions, "
                f"bootstrap {low_pct}th-{high_pct}th percentile [{self.low:+.3f}, {self.high:+.3f}]")

    def brief(self) -> str:
        return f"{self.candidate}: {self.gain:+.3f}, interval [{self.low:+.3f}, {self.high:+.3f}]"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Selection:
    chosen: str
    reason: str  # one sentence: why `chosen` was kept
    comparisons: tuple[Comparison, ...]  # every challenge, in the order they were made


def paired_bootstrap(candidate: Sequence[float], baseline: Sequence[float],
                     rule: SelectionRule = SelectionRule()) -> tuple[float, float, float]:
    """(mean gain, low, high) of `candidate` over `baseline`, two score lists over the same questions in the same
    order: the questions are resampled `rule.resamples` times (seeded), and low/high are the (1 - confidence) and
    confidence quantiles of the resampled mean gains."""
    if len(candidate) != len(baseline):
        raise ValueError(f"paired scores must cover the same questions: {len(candidate)} and {len(baseline)} scores")
    if not candidate:
        raise ValueError("no questions to compare the candidates on")
    gains = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    picks = np.random.default_rng(rule.seed).integers(0, len(gains), size=(rule.resamples, len(gains)))
    means = gains[picks].mean(axis=1)
    low, high = np.quantile(means, [1 - rule.confidence, rule.confidence])
    return float(gains.mean()), float(low), float(high)


def compare(candidate: str, candidate_scores: Sequence[float], baseline: str, baseline_scores: Sequence[float],
            rule: SelectionRule = SelectionRule()) -> Comparison:
    gain, low, high = paired_bootstrap(candidate_scores, baseline_scores, rule)
    return Comparison(candidate, baseline, len(candidate_scores), round(gain, 4), round(low, 4), round(high, 4),
                      won=low > 0)


def choose_candidate(scores: dict[str, Sequence[float]], rule: SelectionRule = SelectionRule()) -> Selection:
    """The kept program of `scores` ({name: per-question combined scores}, simplest first, all over the same
    questions): the first is kept unless a later one beats it outside noise; a candidate that does becomes the one
    the rest must beat. So of two compiled programs that both beat zero-shot, the simpler is kept unless the other
    also beats it."""
    names = list(scores)
    if not names:
        raise ValueError("no candidates to choose from")
    kept, comparisons = names[0], []
    for name in names[1:]:
        comparison = compare(name, scores[name], kept, scores[kept], rule)
        comparisons.append(comparison)
        if comparison.won:
            kept = name
    return Selection(kept, _reason(names[0], kept, comparisons, rule), tuple(comparisons))


def _reason(simplest: str, kept: str, comparisons: list[Comparison], rule: SelectionRule) -> str:
    if not comparisons:
        return f"{simplest} kept: there was no other candidate"
    if kept == simplest:
        best = max(comparisons, key=lambda c: c.gain)
        return f"{simplest} kept: no candidate beat it outside noise (best {best.brief()})"
    won = next(c for c in comparisons if c.won and c.candidate == kept)
    survived = [c for c in comparisons if c.baseline == kept]  # the challenges after it won, all lost
    reason = won.describe(rule)
    if survived:
        reason += f"; none beat it outside noise after it (best {max(survived, key=lambda c: c.gain).brief()})"
    return reason


def _percent(share: float) -> str:
    return f"{100 * share:g}"
