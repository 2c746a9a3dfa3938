"""LoRA on the reader's projections: for each adapted matrix W, a low-rank update `scale * B @ A` (A: rank x in,
B: out x rank, B starting at zero so training starts from the base model). Matrices are named as in the GGUF
(`blk.27.attn_q.weight`), which is how the adapter file and llama.cpp name them too."""

from __future__ import annotations

import math

import torch

from bookrag.errors import ConfigError
from programs.train.lora_config import LoraConfig, matrix_shape
from programs.train.model_shape import ModelShape


class LoraWeights(torch.nn.Module):
    def __init__(self, config: LoraConfig, shape: ModelShape, seed: int = 0):
        super().__init__()
        self.config = config
        generator = torch.Generator().manual_seed(seed)
        self.a, self.b = torch.nn.ParameterDict(), torch.nn.ParameterDict()
        for layer in config.layers(shape):
            for matrix in config.matrices:
                out_features, in_features = matrix_shape(shape, matrix)
                key = _key(layer, matrix)
                bound = 1 / math.sqrt(in_features)  # kaiming-uniform with a = sqrt(5), as torch's Linear and peft
                a = (torch.rand(config.rank, in_features, generator=generator) * 2 - 1) * bound
                self.a[key] = torch.nn.Parameter(a)
                self.b[key] = torch.nn.Parameter(torch.zeros(out_features, config.rank))
        self.dropout = torch.nn.Dropout(config.dropout)

    def start_from(self, alpha: float, matrices: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Start from a trained adapter (`adapter_file.read_adapter`): a book's training on top of the shipped reader.
        Its matrices and rank must be these; its alpha scales its updates to this config's scale."""
        ours = {name: (a, b) for name, a, b in self.named_matrices()}
        if set(matrices) != set(ours):
            raise ConfigError(f"the adapter adapts {len(matrices)} matrices and this training {len(ours)}: train with "
                             "the adapter's layers and matrices, or set BOOKRAG_LOCAL_ADAPTER=none")
        with torch.no_grad():
            for name, (a, b) in matrices.items():
                if a.shape != ours[name][0].shape or b.shape != ours[name][1].shape:
                    raise ConfigError(f"the adapter's {name} has rank {a.shape[0]}, this training's {self.config.rank}")
                ours[name][0].copy_(a)
                ours[name][1].copy_(b * (alpha / a.shape[0]) / self.config.scale)

    def delta(self, layer: int, matrix: str, x: torch.Tensor) -> torch.Tensor | None:
        """The update's output for input `x`, or None where the matrix is not adapted."""
        key = _key(layer, matrix)
        if key not in self.a:
            return None
        return (self.dropout(x) @ self.a[key].T) @ self.b[key].T * self.config.scale

    def named_matrices(self):
        """(GGUF tensor name, A, B) of every adapted matrix."""
        for key in self.a:
            layer, matrix = key.split("_", 2)[1], key.split("_", 2)[2]
            yield f"blk.{layer}.{matrix}.weight", self.a[key], self.b[key]


def _key(layer: int, matrix: str) -> str:
    return f"blk_{layer}_{matrix}"
