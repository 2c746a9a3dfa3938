"""`FinetuneSettings`: how the reader is trained (the LoRA's shape, the training plan, where the targets come from),
kept apart from the training so that reading them needs neither DSPy nor torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from programs.train.lora_config import LoraConfig
from programs.train.training_plan import TrainingPlan


@dataclass(frozen=True)
class FinetuneSettings:
    lora: LoraConfig = field(default_factory=LoraConfig)
    plan: TrainingPlan = field(default_factory=TrainingPlan)
    bootstrap: bool = True  # the program's own right replies as targets where it has them
