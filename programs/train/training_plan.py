"""How long and how fast the reader trains: how many examples, epochs, batch, learning rate, held-out evaluations,
patience, seed."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TrainingPlan:
    # At most this many examples (chosen by programs/compile/example_choice.py); None: every one. 440 fit one hour of
    # 2 AVX-512 cores for the shipped reader (docs/results.md).
    examples: int | None = 440
    epochs: int = 2  # the best step by held-out loss is kept
    minutes: float | None = None  # stop after the step that passes this many minutes of training, keeping the best
    # The frozen layers' products in int8 (Qwen2Decoder.quantize_frozen): 2.9x float32's speed, but their output 6.5%
    # (median) off float32's, against 0.8% for bfloat16 at 2.2x (benchmarks/frozen_precision.py): off by default.
    frozen_int8: bool = False
    batch_size: int = 8
    # For q,v alone. 4e-4 for one epoch on best-first targets taught the position of the answer (docs/results.md,
    # 2026-11-28); RAFT-style targets train at 2e-4 for up to two epochs.
    learning_rate: float = 2e-4
    warmup_steps: int = 4
    evaluations_per_epoch: int = 2  # dev loss this many times an epoch (and at the end)
    patience: int = 2  # evaluations without a better dev loss before stopping
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)
