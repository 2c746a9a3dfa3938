"""A qwen2 GGUF's shape (layers, widths, heads, rope base), read from its header alone: what the trainer builds its
decoder and LoRA weights for. Read with the runtime's header reader (programs/lm/gguf_header.py), before any heavy
work: a file of another kind is a configuration error naming it, not a crash in the gguf package's reader."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bookrag.errors import ConfigError
from programs.lm.gguf_header import GGUFHeader, NotGGUF, read_gguf_header, shown

ARCHITECTURE = "qwen2"
_NEEDS = ("training a reader needs a qwen2 GGUF (the packaged Qwen2.5-Coder is one): unset BOOKRAG_LOCAL_MODEL to "
          "train the packaged model")


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
    """The shape of the qwen2 GGUF at `path`, from its header alone (no tensor is read); UnsupportedModel naming
    the file and what it is otherwise."""
    header = _header(path)
    architecture = header.metadata.get("general.architecture")
    if architecture != ARCHITECTURE:
        raise _unsupported(path, f"is a GGUF of architecture {shown(architecture)}" if isinstance(architecture, str)
                           else "is a GGUF without a general.architecture string")
    embedding = header.tensors.get("token_embd.weight")
    if embedding is None or len(embedding.shape) < 2:
        raise _unsupported(path, "has no token_embd.weight of two dimensions: it is not a qwen2 model GGUF")
    count = partial(_setting, header, path, "a whole number above 0", _is_count)
    number = partial(_setting, header, path, "a number above 0", _is_number)
    return ModelShape(
        layers=count("block_count"), hidden=count("embedding_length"), ffn=count("feed_forward_length"),
        heads=count("attention.head_count"), kv_heads=count("attention.head_count_kv"),
        rope_base=float(number("rope.freq_base")), norm_eps=float(number("attention.layer_norm_rms_epsilon")),
        vocab=embedding.shape[1],
    )


def _header(path: str | Path) -> GGUFHeader:
    try:
        return read_gguf_header(path)
    except NotGGUF as exc:
        raise _unsupported(path, str(exc)) from None
    except OSError as exc:
        raise _unsupported(path, f"cannot be read ({exc.strerror or exc})") from None


def _setting(header: GGUFHeader, path, kind: str, fits, key: str):
    """The metadata value `qwen2.<key>`, refused unless it `fits`: the trainer builds its tensors' shapes of it."""
    name = f"{ARCHITECTURE}.{key}"
    value = header.metadata.get(name)
    if value is None:
        raise _unsupported(path, f"has no {name} in its metadata: it is not a qwen2 model GGUF")
    if not fits(value):
        got = shown(repr(value)) if isinstance(value, (int, float, str)) else f"of GGUF type {header.value_types[name]}"
        raise _unsupported(path, f"has {name} {got}, not {kind}: it is not a qwen2 model GGUF")
    return value


def _is_count(value) -> bool:
    return type(value) is int and value > 0  # not a bool, which is an int too


def _is_number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value > 0


def _unsupported(path, problem: str) -> UnsupportedModel:
    return UnsupportedModel(f"BOOKRAG_LOCAL_MODEL {path} {problem}: {_NEEDS}")
