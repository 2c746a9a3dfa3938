"""The refusal gate's default calibration: what an uncompiled (zero-shot) program refuses with.

The gate's features do not depend on the book, so a gate fitted on every labeled train split the project has is a
better start on a new book than a hand-set prior (measured leave-one-book-out by benchmarks/refusal_transfer.py).
`make calibration` rebuilds this file (programs/compile/default_gate.py). A compiled program's own gate replaces it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DEFAULT_CALIBRATION = Path(__file__).with_name("default_calibration.json")


@cache
def _calibration() -> dict:
    return json.loads(DEFAULT_CALIBRATION.read_text(encoding="utf-8"))


def default_state() -> dict:
    """The gate state (`RefusalGate.load_state` format), marked uncalibrated: nothing was fitted on this book."""
    return {**_calibration()["state"], "calibrated": False}


def default_provenance() -> dict:
    """What the default was fitted on and how: question sets with their sha256, embedder, command."""
    return {k: v for k, v in _calibration().items() if k != "state"}


def write_default_calibration(state: dict, provenance: dict, path: Path = DEFAULT_CALIBRATION) -> Path:
    path.write_text(json.dumps({**provenance, "state": state}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _calibration.cache_clear()
    return path
