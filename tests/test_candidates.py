"""The candidate programs compile_program chooses among (programs/compile/candidates.py)."""

from __future__ import annotations

import pytest

from programs.compile.candidates import ZERO_SHOT, candidates
from programs.compile.optimizers import OptimizerSettings


@pytest.mark.parametrize("optimizer, max_demos, names", [
    ("bootstrap", 4, ["zero-shot", "bootstrap-2", "bootstrap-4"]),
    ("labeled", 3, ["zero-shot", "labeled-1", "labeled-3"]),
    ("bootstrap", 1, ["zero-shot", "bootstrap-1"]),  # half of 1 demo is none: one compiled candidate
    ("bootstrap", 0, ["zero-shot"]),
    ("mipro", 4, ["zero-shot", "mipro"]),  # a search optimizer already chooses among its own programs
    ("gepa", 4, ["zero-shot", "gepa"]),
])
def test_candidates_are_zero_shot_then_the_compiled_ones_simplest_first(optimizer, max_demos, names):
    settings = OptimizerSettings(optimizer, max_demos=max_demos, seed=3)
    found = candidates(settings)
    assert [c.name for c in found] == names
    assert found[0] == ZERO_SHOT and ZERO_SHOT.settings is None
    for candidate in found[1:]:
        assert candidate.settings.name == optimizer and candidate.settings.seed == 3
    if optimizer == "bootstrap" and max_demos == 4:
        assert [c.settings.max_demos for c in found[1:]] == [2, 4]
        assert [c.description for c in found[1:]] == ["bootstrap, 2 demos", "bootstrap, 4 demos"]
