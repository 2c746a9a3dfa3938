"""A qwen2 GGUF's shape (layers, widths, heads, rope base), read from its metadata alone: what the trainer builds its
decoder and LoRA weights for."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bookrag.errors import ConfigError

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


class UnsupportedModel(ConfigError):
    """A GGUF the trainer cannot train a reader for (exit 2)."""


def model_shape(path: str | Path) -> ModelShape:
    """The shape of a qwen2 GGUF, from its metadata alone (no tensor is read)."""
    import gguf

    return model_shape_of(gguf.GGUFReader(str(path)), path)


def model_shape_of(reader, path) -> ModelShape:
    """The shape from an open `gguf.GGUFReader` of the file at `path`."""
    field = partial(_field, reader, path)
    architecture = field("general.architecture")
    if architecture != ARCHITECTURE:
        raise UnsupportedModel(f"{path} is a {architecture!r} model: a reader is trained on qwen2 GGUFs only (the "
                               "packaged Qwen2.5-Coder is one): unset BOOKRAG_LOCAL_MODEL to train the packaged model")
    return ModelShape(
        layers=int(field("qwen2.block_count")), hidden=int(field("qwen2.embedding_length")),
        ffn=int(field("qwen2.feed_forward_length")), heads=int(field("qwen2.attention.head_count")),
        kv_heads=int(field("qwen2.attention.head_count_kv")),
        rope_base=float(field("qwen2.rope.freq_base")),
        norm_eps=float(field("qwen2.attention.layer_norm_rms_epsilon")),
        vocab=int(next(t for t in reader.tensors if t.name == "token_embd.weight").shape[1]),
    )


def _field(reader, path, key: str):
    field = reader.get_field(key)
    if field is None:
        raise UnsupportedModel(f"{path} has no {key} in its metadata: it is not a qwen2 model GGUF")
    return field.contents()
