"""`FinetuneSettings`: how the reader is trained (the LoRA's shape, the training plan, where the targets come from),
kept apart from the training so that reading them needs neither DSPy nor torch; and the folder a training works in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bookrag.config import Settings
from programs.train.lora_config import LoraConfig
from programs.train.training_plan import TrainingPlan


@dataclass(frozen=True)
class FinetuneSettings:
    """A training of the reader, by train_reader.py or by optimize.py --optimizer finetune: each default is written
    here (or in LoraConfig and TrainingPlan) once, both commands' flags default to it, and both manifests record
    the settings a training ran with (`as_dict`)."""

    lora: LoraConfig = field(default_factory=LoraConfig)
    plan: TrainingPlan = field(default_factory=TrainingPlan)
    # Answer targets in the reader's own words where it gives a right reply (or one with the answer as a hint): one or
    # two LM calls a question (10-15 s each on 2 cores), kept in a reply file so that each prompt is asked once.
    # False: reference answers alone, no LM call.
    bootstrap: bool = True

    def as_dict(self) -> dict:
        return {"lora": self.lora.as_dict(), "plan": self.plan.as_dict(), "bootstrap": self.bootstrap}


def training_folder(settings: Settings, name: str) -> Path:
    """Where a training keeps its checkpoint and the frozen layers' outputs, and writes its adapter:
    BOOKRAG_DATA_DIR/training/<name> (the book's name, or `reader` for the shipped reader)."""
    return settings.data_dir / "training" / name
