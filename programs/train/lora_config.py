"""Which projections LoRA adapts, at what rank and scale: the settings of an adapter, kept apart from its weights so
that choosing them needs no torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from programs.train.model_shape import ModelShape

# Every linear projection of a qwen2 layer.
MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


ALPHA_PER_RANK = 2.0  # alpha = 2 x rank: the update's scale (alpha / rank) stays 2 whatever the rank


@dataclass(frozen=True)
class LoraConfig:
    rank: int = 16
    alpha: float | None = None  # None: ALPHA_PER_RANK x rank (an adapter read from a file keeps its own)
    top_layers: int = 8  # the last N layers are adapted; those below stay as they are (and are run once)
    # The query and value projections only: llama.cpp keeps its repacked kernels for every other matrix (an adapter on
    # all seven cost 50% of the answer time), and q,v alone were on the quality/cost front for a documentation RAG
    # reader (arXiv 2605.28222).
    matrices: tuple[str, ...] = ("attn_q", "attn_v")
    dropout: float = 0.05

    def __post_init__(self):
        if self.alpha is None:
            object.__setattr__(self, "alpha", ALPHA_PER_RANK * self.rank)

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    def layers(self, shape: ModelShape) -> range:
        return range(shape.layers - min(self.top_layers, shape.layers), shape.layers)

    def as_dict(self) -> dict:
        return {**asdict(self), "matrices": list(self.matrices)}

    @classmethod
    def from_dict(cls, data: dict) -> LoraConfig:
        return cls(**{**data, "matrices": tuple(data["matrices"])})


def matrix_shape(shape: ModelShape, matrix: str) -> tuple[int, int]:
    """(out, in) of one projection."""
    kv = shape.kv_heads * shape.head_dim
    return {"attn_q": (shape.hidden, shape.hidden), "attn_k": (kv, shape.hidden), "attn_v": (kv, shape.hidden),
            "attn_output": (shape.hidden, shape.hidden), "ffn_gate": (shape.ffn, shape.hidden),
            "ffn_up": (shape.ffn, shape.hidden), "ffn_down": (shape.hidden, shape.ffn)}[matrix]
