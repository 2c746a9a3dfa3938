"""The selection rule (programs/compile/selection.py) on synthetic per-question score lists."""

from __future__ import annotations

import random

import pytest

from programs.compile.selection import SelectionRule, choose_candidate, compare, paired_bootstrap

RULE = SelectionRule()
ZERO_SHOT = [0.5, 0.9, 0.0, 1.0, 0.4, 0.7, 1.0, 0.2, 0.6, 0.8] * 4  # 40 dev questions


def shifted(scores, gains):
    """`scores` plus a per-question gain, clipped to the metric's 0..1."""
    return [min(1.0, max(0.0, s + g)) for s, g in zip(scores, gains)]


def noise(scale: float, seed: int) -> list[float]:
    """Gains that average 0: each question gains or loses `scale`, half of each."""
    signs = [1, -1] * (len(ZERO_SHOT) // 2)
    random.Random(seed).shuffle(signs)
    return [scale * s for s in signs]


def test_a_clear_gain_wins():
    better = shifted(ZERO_SHOT, [0.1] * len(ZERO_SHOT))
    selection = choose_candidate({"zero-shot": ZERO_SHOT, "bootstrap-2": better}, RULE)
    assert selection.chosen == "bootstrap-2"
    (comparison,) = selection.comparisons
    assert comparison.won and comparison.low > 0 and comparison.gain == pytest.approx(0.08)  # 1.0s stay 1.0
    assert selection.reason.startswith("bootstrap-2: +0.080 combined over zero-shot on 40 questions, bootstrap "
                                       "5th-95th percentile [+0.0")


def test_a_gain_within_noise_keeps_the_simpler():
    # +0.3 on 22 questions, -0.3 on 18: a mean gain of +0.03 that resampling the questions easily reverses.
    gains = [0.3] * 22 + [-0.3] * 18
    random.Random(1).shuffle(gains)
    candidate = [s + g for s, g in zip([0.5] * 40, gains)]
    selection = choose_candidate({"zero-shot": [0.5] * 40, "bootstrap-4": candidate}, RULE)
    (comparison,) = selection.comparisons
    assert comparison.gain == pytest.approx(0.03) and comparison.low < 0 < comparison.high
    assert selection.chosen == "zero-shot" and not comparison.won
    assert selection.reason == ("zero-shot kept: no candidate beat it outside noise (best bootstrap-4: +0.030, "
                                f"interval [{comparison.low:+.3f}, {comparison.high:+.3f}])")


def test_a_loss_keeps_the_simpler():
    worse = shifted(ZERO_SHOT, [-0.2] * len(ZERO_SHOT))
    selection = choose_candidate({"zero-shot": ZERO_SHOT, "bootstrap-2": worse}, RULE)
    assert selection.chosen == "zero-shot" and selection.comparisons[0].high < 0


def test_ties_keep_the_simpler():
    selection = choose_candidate({"zero-shot": ZERO_SHOT, "bootstrap-2": ZERO_SHOT, "bootstrap-4": ZERO_SHOT}, RULE)
    assert selection.chosen == "zero-shot"
    assert [(c.gain, c.low, c.high, c.won) for c in selection.comparisons] == [(0.0, 0.0, 0.0, False)] * 2


def test_a_more_complex_candidate_must_beat_the_simpler_winner_not_only_zero_shot():
    two = shifted(ZERO_SHOT, [0.1] * len(ZERO_SHOT))
    four = shifted(two, noise(0.05, seed=3))  # about as good as bootstrap-2: better than zero-shot, not than it
    selection = choose_candidate({"zero-shot": ZERO_SHOT, "bootstrap-2": two, "bootstrap-4": four}, RULE)
    assert selection.chosen == "bootstrap-2"
    assert [(c.candidate, c.baseline, c.won) for c in selection.comparisons] == [
        ("bootstrap-2", "zero-shot", True), ("bootstrap-4", "bootstrap-2", False)]
    assert "none beat it outside noise after it (best bootstrap-4:" in selection.reason


def test_a_candidate_that_beats_the_simpler_winner_replaces_it():
    two = shifted([0.3] * 40, [0.1] * 40)
    four = shifted(two, [0.2] * 40)
    selection = choose_candidate({"zero-shot": [0.3] * 40, "bootstrap-2": two, "bootstrap-4": four}, RULE)
    assert selection.chosen == "bootstrap-4"
    assert selection.reason.startswith("bootstrap-4: +0.200 combined over bootstrap-2 on 40 questions, "
                                       "bootstrap 5th-95th percentile [+0.200, +0.200]")


def test_the_bootstrap_is_deterministic_with_its_seed_and_varies_with_it():
    candidate = shifted(ZERO_SHOT, noise(0.2, seed=5))
    first = paired_bootstrap(candidate, ZERO_SHOT, SelectionRule(seed=7))
    assert paired_bootstrap(candidate, ZERO_SHOT, SelectionRule(seed=7)) == first
    other = paired_bootstrap(candidate, ZERO_SHOT, SelectionRule(seed=8))
    assert other[0] == first[0] and other[1:] != first[1:]  # same mean gain, other resamples


def test_the_interval_narrows_with_more_resampled_questions_and_holds_the_mean():
    gain, low, high = paired_bootstrap(shifted(ZERO_SHOT, noise(0.2, seed=5)), ZERO_SHOT, RULE)
    assert low < gain < high
    wide = compare("c", [1.0, 0.0] * 5, "b", [0.5] * 10, RULE)
    narrow = compare("c", [1.0, 0.0] * 50, "b", [0.5] * 100, RULE)
    assert narrow.high - narrow.low < wide.high - wide.low


def test_scores_over_different_questions_are_refused():
    with pytest.raises(ValueError, match="same questions: 3 and 2 scores"):
        paired_bootstrap([1.0, 0.0, 1.0], [1.0, 0.0], RULE)
    with pytest.raises(ValueError, match="no questions"):
        paired_bootstrap([], [], RULE)


def test_a_single_candidate_is_kept_and_says_so():
    selection = choose_candidate({"zero-shot": ZERO_SHOT}, RULE)
    assert (selection.chosen, selection.comparisons) == ("zero-shot", ())
    assert selection.reason == "zero-shot kept: there was no other candidate"
