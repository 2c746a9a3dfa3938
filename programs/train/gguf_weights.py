"""A Qwen2 chat GGUF's weights as torch tensors: every tensor dequantized to float32, and the model's shape from the
GGUF's metadata. Training reads the very weights llama.cpp answers with (the packaged Q4_K_M model), so the adapter
learns the corrections of the quantized model it is applied to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ARCHITECTURE = "qwen2"


@dataclass(frozen=True)
class ModelShape:
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    rope_base: float
    norm_eps: float
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class UnsupportedModel(ValueError):
    """A GGUF whose architecture the trainer does not implement."""


def read_gguf(path: str | Path, progress=None) -> tuple[ModelShape, dict[str, torch.Tensor]]:
    """(shape, tensors by GGUF name) of a qwen2 GGUF. `progress(done, total)` is called per tensor."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    shape = _shape(reader, path)
    tensors = {}
    for done, tensor in enumerate(reader.tensors, start=1):
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        tensors[tensor.name] = torch.from_numpy(np.array(values, dtype=np.float32))
        if progress is not None:
            progress(done, len(reader.tensors))
    tensors.setdefault("output.weight", tensors["token_embd.weight"])  # tied embeddings
    return shape, tensors


def model_shape(path: str | Path) -> ModelShape:
    """The shape of a qwen2 GGUF, from its metadata alone (no tensor is read)."""
    import gguf

    return _shape(gguf.GGUFReader(str(path)), path)


def _shape(reader, path) -> ModelShape:
    architecture = _field(reader, "general.architecture")
    if architecture != ARCHITECTURE:
        raise UnsupportedModel(f"{path} is a {architecture!r} model: the reader is trained on qwen2 GGUFs only "
                               "(the packaged Qwen2.5-Coder is one)")
    return ModelShape(
        layers=int(_field(reader, "qwen2.block_count")), hidden=int(_field(reader, "qwen2.embedding_length")),
        ffn=int(_field(reader, "qwen2.feed_forward_length")), heads=int(_field(reader, "qwen2.attention.head_count")),
        kv_heads=int(_field(reader, "qwen2.attention.head_count_kv")),
        rope_base=float(_field(reader, "qwen2.rope.freq_base")),
        norm_eps=float(_field(reader, "qwen2.attention.layer_norm_rms_epsilon")),
        vocab=int(next(t for t in reader.tensors if t.name == "token_embd.weight").shape[1]),
    )


def _field(reader, key: str):
    field = reader.get_field(key)
    if field is None:
        raise UnsupportedModel(f"the GGUF has no {key}")
    return field.contents()
