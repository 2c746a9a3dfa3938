"""The adapted layers' input, computed once: the layers below them never change during training, so each example
goes through them a single time, and each training step starts where they end.

The shared prefix goes through the frozen layers once for all; each example's own tokens go through them attending
to the prefix's keys and values, exactly as in the whole model. Results are kept in memory as float16 (about 1 MB
per example; float32 for one whose values would overflow it) and on disk under the training folder, so a resumed run does not compute them again.
"""

from __future__ import annotations

from pathlib import Path

import torch

from bookrag.atomic_file import atomic_write
from programs.train.examples import TrainingExample
from programs.train.qwen2 import Qwen2Decoder

_HALF_MAX = 60000.0  # float16's largest value is 65504


class FrozenStart:
    def __init__(self, decoder: Qwen2Decoder, first_adapted: int, prefix: tuple[int, ...], folder: Path):
        self.decoder, self.frozen = decoder, range(first_adapted)
        # Another split of the layers, or int8 frozen layers, is another cache.
        self.folder = Path(folder) / f"below-layer-{first_adapted}{'-int8' if decoder.packed else ''}"
        self.prefix_length = len(prefix)
        self._cache: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            hidden = decoder.embed(torch.tensor([prefix], dtype=torch.long)) if prefix else None
            if hidden is None:
                self.prefix_hidden, self._prefix_kv = None, None
            else:
                self.prefix_hidden, self._prefix_kv = decoder.run(hidden, self.frozen, 0)

    def __call__(self, example: TrainingExample) -> torch.Tensor:
        """(positions, hidden): the example's tokens after the frozen layers, in the decoder's precision."""
        key = example.digest
        if key not in self._cache:
            self._cache[key] = self._load(key) if (self.folder / f"{key}.pt").is_file() else self._compute(example)
        return self._cache[key].to(self.decoder.dtype)

    def _compute(self, example: TrainingExample) -> torch.Tensor:
        with torch.no_grad():
            hidden = self.decoder.embed(torch.tensor([example.tokens], dtype=torch.long))
            hidden, _ = self.decoder.run(hidden, self.frozen, self.prefix_length, self._prefix_kv)
        stored = hidden[0].half() if hidden.abs().max() < _HALF_MAX else hidden[0]
        atomic_write(self.folder / f"{example.digest}.pt", lambda temp: torch.save(stored, temp))
        return stored

    def _load(self, key: str) -> torch.Tensor:
        return torch.load(self.folder / f"{key}.pt", weights_only=True)
