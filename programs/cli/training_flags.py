"""The flags of a reader's training that train_reader.py and optimize.py (--optimizer finetune) share: each defaults
to FinetuneSettings', and they resolve into one FinetuneSettings."""

from __future__ import annotations

import dataclasses
import math
from argparse import ArgumentParser, ArgumentTypeError, BooleanOptionalAction

from programs.cli.number_flag import number_flag
from programs.compile.finetune_settings import FinetuneSettings
from programs.train.lora_config import LoraConfig


def add_training_arguments(parser: ArgumentParser, prefix: str = "") -> None:
    """--epochs and --bootstrap/--no-bootstrap; `prefix` heads their help (optimize's: "finetune: ")."""
    defaults = FinetuneSettings()
    parser.add_argument("--epochs", type=int, default=defaults.plan.epochs,
                        help=f"{prefix}passes over the training examples; early stopping on held-out examples may end "
                             f"it sooner (default {defaults.plan.epochs})")
    parser.add_argument("--examples", type=_examples, default=defaults.plan.examples,
                        help=f"{prefix}train on at most N examples, chosen by kind of question with refusals in "
                             f"proportion; `all` for every one (default {defaults.plan.examples})")
    parser.add_argument("--minutes", type=_minutes, default=defaults.plan.minutes,
                        help=f"{prefix}stop after the step that passes this many minutes of training (the frozen "
                             "layers' pass and the steps), keeping the weights of the best held-out loss; the same "
                             "command with more minutes goes on from there (default: no limit)")
    parser.add_argument("--frozen-int8", action=BooleanOptionalAction, default=defaults.plan.frozen_int8,
                        help=f"{prefix}run the frozen lower layers with int8 weights: faster where the CPU has no "
                             "bfloat16, less exact (benchmarks/frozen_precision.py) (default: off)")
    parser.add_argument("--bootstrap", action=BooleanOptionalAction, default=defaults.bootstrap,
                        help=f"{prefix}answer targets in the model's own words where its reply is right, or right with "
                             "the answer as a hint (one or two LM calls per question whose passages hold its answer, "
                             "kept in a reply file); --no-bootstrap: from the reference answers, no LM call "
                             f"(default {'--bootstrap' if defaults.bootstrap else '--no-bootstrap'})")


def finetune_settings(args, lora: LoraConfig | None = None) -> FinetuneSettings:
    """The training the flags ask for: --examples, --epochs, --minutes, --frozen-int8, --seed, --bootstrap, and
    `lora` (default: FinetuneSettings')."""
    defaults = FinetuneSettings()
    plan = dataclasses.replace(defaults.plan, examples=args.examples, epochs=args.epochs, minutes=args.minutes,
                               frozen_int8=args.frozen_int8, seed=args.seed)
    return FinetuneSettings(lora or defaults.lora, plan, args.bootstrap)


def training_flags_given(args) -> list[str]:
    """The training flags whose value is not the default: a compile that trains no reader would ignore them."""
    defaults = FinetuneSettings()
    values = {"--epochs": (args.epochs, defaults.plan.epochs), "--examples": (args.examples, defaults.plan.examples),
              "--minutes": (args.minutes, defaults.plan.minutes),
              "--frozen-int8": (args.frozen_int8, defaults.plan.frozen_int8),
              "--bootstrap": (args.bootstrap, defaults.bootstrap)}
    return [flag for flag, (value, default) in values.items() if value != default]


def _examples(text: str) -> int | None:
    if text == "all":
        return None
    if not text.isdecimal() or int(text) < 1:  # isdigit() lets "²" through, which int() refuses
        raise ArgumentTypeError(f"expected a number of examples (at least 1) or `all`, not {text!r}")
    return int(text)


def _minutes(text: str) -> float:
    """--minutes: a finite number above 0 (nan never stops a training; 0 or less writes the untrained adapter)."""
    return number_flag(text, lambda minutes: 0 < minutes < math.inf, "a number of minutes above 0, like 30 or 0.5")
