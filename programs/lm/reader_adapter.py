"""`ReaderAdapter`: which LoRA adapter the local model answers through (a trained reader, programs/train/).

The adapter is chosen once from the settings (`make_lm`: BOOKRAG_LOCAL_ADAPTER, by default the shipped reader), and
replaced in two places only: a compiled artifact's own adapter when it is loaded (`bind_reader`), and the one the
finetune optimizer trains. Anything that asks which adapter answers asks the LM: `lm_adapter(lm)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReaderAdapter:
    """A LoRA adapter GGUF (`path`); `training` is the record of the training that wrote it when this process did
    (the finetune optimizer's: it goes into the artifact's manifest with the adapter), None for one read from a file
    (the configured one, an artifact's)."""

    path: Path
    training: dict | None = None
