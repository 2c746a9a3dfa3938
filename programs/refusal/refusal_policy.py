"""`RefusalPolicy`: every constant that decides how much the program refuses, in one frozen place.

The gate's fit (`RefusalGate.fit`, `fit_cosine_cut`), the choice among the fitted gates (`calibration.choose_gate`)
and the off-topic cut (`calibration.off_topic_cut`) read it; a compile records it in its manifest
(`refusal_gate.policy`), and the gate keeps what it needs at answer time (its cut, `min_top_cosine`) in its saved
state. What each choice costs on dev: benchmarks/refusal_policy.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class RefusalPolicy:
    # Share of answerable questions a gate may refuse: out of fold when fitted, on dev when chosen. The gate's cut is
    # the one that refuses the most must-refuse questions within it: higher refuses more of both.
    max_false_refusal: float = 0.05
    # The weakest retrieval any question passes with, whatever the other features say: the lowest top cosine of an
    # answerable dev question was 0.32 on the bundled book (MiniLM); out-of-scope questions sit at 0.12-0.20.
    min_top_cosine: float = 0.25
    # A fitted gate's answers are of "high" confidence at or above this probability (and its cut).
    high_confidence: float = 0.8
    # Share of off-topic dev questions whose refusal may name the closest sections (`off_topic_below`).
    max_off_topic_pointed: float = 0.05

    def __post_init__(self):
        if bad := [f"{f.name} {getattr(self, f.name)}" for f in fields(self) if not 0 <= getattr(self, f.name) <= 1]:
            raise ValueError(f"a refusal policy's shares and scores lie in [0, 1], not {', '.join(bad)}")

    def as_dict(self) -> dict:
        return asdict(self)


DEFAULT_POLICY = RefusalPolicy()  # what optimize.py and `make calibration` fit under unless told otherwise
