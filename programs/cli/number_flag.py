"""A flag's number, checked as argparse reads it: the commands' flags that take a bounded float share it."""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Callable


def number_flag(text: str, accepts: Callable[[float], bool], expected: str) -> float:
    """`text` as a float that `accepts` holds for (nan holds for no bound), else an ArgumentTypeError saying
    `expected`."""
    problem = ArgumentTypeError(f"expected {expected}, not {text!r}")
    try:
        number = float(text)
    except ValueError:
        raise problem from None
    if not accepts(number):
        raise problem
    return number
