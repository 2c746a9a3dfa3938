"""A qwen2 GGUF's shape (layers, widths, heads, rope base), read from its metadata alone: what the trainer builds its
decoder and LoRA weights for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def model_shape(path: str | Path) -> ModelShape:
    """The shape of a qwen2 GGUF, from its metadata alone (no tensor is read)."""
    import gguf

    return model_shape_of(gguf.GGUFReader(str(path)), path)


def model_shape_of(reader, path) -> ModelShape:
    """The shape from an open `gguf.GGUFReader` of the file at `path`."""
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
