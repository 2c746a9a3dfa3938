"""The refusal policy's flag, which optimize.py and `make calibration` (programs/cli/calibrate.py) share: how much
the refusal gate they fit refuses."""

from __future__ import annotations

from argparse import ArgumentParser

from programs.cli.number_flag import number_flag
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy


def add_refusal_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--max-false-refusal", type=_share, default=DEFAULT_POLICY.max_false_refusal,
                        help="share of answerable questions the refusal gate may refuse: higher refuses more "
                             "must-refuse questions, and more answerable ones; README: How much it refuses "
                             f"(default {DEFAULT_POLICY.max_false_refusal})")


def refusal_policy(args) -> RefusalPolicy:
    return RefusalPolicy(max_false_refusal=args.max_false_refusal)


def _share(text: str) -> float:
    return number_flag(text, lambda share: 0 <= share <= 1, "a share from 0 to 1, like 0.05")
