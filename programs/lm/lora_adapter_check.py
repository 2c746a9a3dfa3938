"""Whether llama.cpp can apply a LoRA adapter file to a model, checked before llama.cpp sees it.

llama.cpp answers a file it cannot apply with a NULL adapter, which llama-cpp-python does not catch: the process dies
of a segmentation fault, with no message; a metadata value of the wrong type aborts it. So the file is checked
first, as llama.cpp reads it (src/llama-adapter.cpp, ggml/src/gguf.cpp): a GGUF with `general.type` adapter,
`adapter.type` lora and the model's architecture, whose tensors are `<model tensor>.lora_a` and `.lora_b` pairs
(`_norm.weight` tensors are ignored), laid out one after the other within the file; each pair fits its model tensor:
in GGUF's order (inputs first), a weight of shape [in, out] takes lora_a [in, rank] and lora_b [rank, out] (the
token embedding's pair is stored the other way round).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from bookrag.errors import ConfigError
from programs.lm.gguf_header import (
    ARRAY,
    FLOAT32,
    MAX_DIMS,
    STRING,
    UINT32,
    GGUFHeader,
    NotGGUF,
    Skipped,
    TensorInfo,
    aligned,
    read_gguf_header,
    shown,
)

_A, _B, _IGNORED = "lora_a", "lora_b", "_norm.weight"
# The tensor types an adapter is written in (llama.cpp's convert_lora_to_gguf.py: f32, f16, bf16, q8_0), by ggml
# type id: (elements per block, bytes per block).
_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34)}
_LAYER = re.compile(r"blk\.(\d+)\.")
_FIX = ("point BOOKRAG_LOCAL_ADAPTER at a LoRA adapter GGUF trained for this model (train_reader.py writes one), or "
        "set it to none")


class BadAdapter(ConfigError):
    """A LoRA adapter file llama.cpp cannot apply to the model (exit 2)."""


def check_lora_adapter(adapter: Path, model: Path) -> None:
    """Raise BadAdapter, naming the file and what is wrong, unless llama.cpp can apply `adapter` to `model`."""
    header, pairs = _checked_file(adapter)
    model_header = _header(model, f"the model {model}", "point BOOKRAG_LOCAL_MODEL at a .gguf model")
    try:
        _fits(header, pairs, model_header)
    except _Problem as problem:
        raise BadAdapter(f"the LoRA adapter {adapter} {problem}: {_FIX}") from None


def check_lora_file(adapter: Path) -> None:
    """Raise BadAdapter unless `adapter` is a LoRA adapter GGUF that llama.cpp reads, whatever the model: its header
    alone, read before the file is hashed whole (a model named as the adapter is gigabytes)."""
    _checked_file(adapter)


def _checked_file(adapter: Path) -> tuple[GGUFHeader, dict[str, tuple[TensorInfo, TensorInfo]]]:
    header = _header(adapter, f"the LoRA adapter {adapter}", _FIX)
    try:
        return header, _lora_pairs(header)
    except _Problem as problem:
        raise BadAdapter(f"the LoRA adapter {adapter} {problem}: {_FIX}") from None


class _Problem(Exception):
    """What is wrong with the adapter, to be said after its name."""


def _header(path: Path, what: str, fix: str) -> GGUFHeader:
    try:
        return read_gguf_header(path)
    except NotGGUF as exc:
        raise BadAdapter(f"{what} {exc}: {fix}") from None
    except OSError as exc:
        raise BadAdapter(f"{what} cannot be read ({exc.strerror or exc}): {fix}") from None


def _lora_pairs(header: GGUFHeader) -> dict[str, tuple[TensorInfo, TensorInfo]]:
    """The adapter's (lora_a, lora_b) by the model tensor they adapt, once its metadata and layout are checked."""
    if (kind := _string(header, "general.type")) != "adapter":
        raise _Problem(f"is a {shown(kind)}, not a LoRA adapter (general.type={shown(kind)})" if kind else
                       "has no general.type: it is not a LoRA adapter GGUF")
    if (kind := _string(header, "adapter.type")) != "lora":
        raise _Problem(f"is not a LoRA adapter (adapter.type={shown(kind or 'missing')}, not lora)")
    _string(header, "general.architecture")  # read by llama.cpp as a string too
    if "adapter.lora.alpha" in header.metadata:  # llama.cpp aborts on another type; NaN answers NaN
        alpha = header.metadata["adapter.lora.alpha"]
        if header.value_types["adapter.lora.alpha"] != FLOAT32:
            raise _Problem(f"has adapter.lora.alpha of GGUF type {header.value_types['adapter.lora.alpha']}, not "
                           "float32")
        if not math.isfinite(alpha):
            raise _Problem(f"has adapter.lora.alpha {alpha}: it must be a finite number")
    tokens = header.metadata.get("adapter.alora.invocation_tokens")
    if tokens is not None and not (header.value_types["adapter.alora.invocation_tokens"] == ARRAY and
                                   tokens.item_type == UINT32):
        raise _Problem("has adapter.alora.invocation_tokens that is not an array of uint32 token ids")
    _check_layout(header)
    pairs: dict[str, dict[str, TensorInfo]] = {}
    for name, tensor in header.tensors.items():
        if name.endswith(_IGNORED):
            continue
        adapted, _, matrix = name.rpartition(".")
        if matrix not in (_A, _B):
            raise _Problem(f"holds the tensor {shown(name)}, which is neither a .lora_a nor a .lora_b matrix")
        pairs.setdefault(adapted, {})[matrix] = tensor
    if not pairs:  # llama.cpp would apply it, changing nothing
        raise _Problem("holds no LoRA matrices (.lora_a and .lora_b tensors)")
    for adapted, pair in pairs.items():
        if len(pair) < 2:
            (matrix,) = pair
            raise _Problem(f"has {shown(adapted)}.{matrix} without its .{_B if matrix == _A else _A} matrix")
    return {adapted: (pair[_A], pair[_B]) for adapted, pair in pairs.items()}


def _string(header: GGUFHeader, key: str) -> str | None:
    """The string at `key`, None when missing; llama.cpp aborts on a value of another type."""
    value = header.metadata.get(key)
    if isinstance(value, Skipped) and header.value_types[key] == STRING:
        raise _Problem(f"has a {key} of {value.length:,} bytes")
    if value is not None and not isinstance(value, str):
        raise _Problem(f"has {key} of GGUF type {header.value_types[key]}, not a string")
    return value


def _check_layout(header: GGUFHeader) -> None:
    """Every tensor of a type an adapter is written in, each right after the one before it (at the alignment), and
    all of them within the file: llama.cpp reads them from there."""
    due = 0
    for tensor in header.tensors.values():
        if tensor.ggml_type not in _TYPES:
            raise _Problem(f"holds {shown(tensor.name)} of ggml type {tensor.ggml_type}; an adapter's tensors are "
                           f"{', '.join(name for name, *_ in _TYPES.values())}")
        type_name, block, block_bytes = _TYPES[tensor.ggml_type]
        if tensor.shape[0] % block:
            raise _Problem(f"holds {shown(tensor.name)} of shape {list(tensor.shape)}, whose rows are no whole "
                           f"{type_name} blocks of {block}")
        if tensor.offset != due:
            raise _Problem(f"has {shown(tensor.name)} at offset {tensor.offset}, where {due} was due")
        size = math.prod(tensor.shape) // block * block_bytes
        if (end := header.data_start + tensor.offset + size) > header.size:
            raise _Problem(f"is {header.size:,} bytes, but its {shown(tensor.name)} ends at byte {end:,} "
                           "(a truncated file?)")
        due = aligned(tensor.offset + size, header.alignment)


def _fits(adapter: GGUFHeader, pairs: dict[str, tuple[TensorInfo, TensorInfo]], model: GGUFHeader) -> None:
    """Each pair adapts a tensor the model has, in its shape."""
    architecture, adapts = model.string("general.architecture"), adapter.string("general.architecture")
    if adapts != architecture:
        raise _Problem(f"is for {shown(adapts)} models, and the model is {shown(str(architecture))}" if adapts else
                       f"names no general.architecture (the model is {shown(str(architecture))})")
    layers = model.metadata.get(f"{architecture}.block_count")
    for name, (a, b) in pairs.items():
        weight = model.tensors.get(name)
        if weight is None:
            layer = _LAYER.match(name)
            if layer and isinstance(layers, int) and int(layer[1]) >= layers:
                raise _Problem(f"adapts blk.{layer[1]}, but the model has {layers} layers")
            raise _Problem(f"adapts {shown(name)}, which the model does not have")
        _pair_fits(name, a, b, _padded(weight.shape))


def _pair_fits(name: str, a: TensorInfo, b: TensorInfo, weight: tuple[int, ...]) -> None:
    """A weight [in, out] takes lora_a [in, rank] and lora_b [rank, out]; the token embedding [hidden, vocab] takes
    lora_a [rank, vocab] and lora_b [rank, hidden] (llama.cpp looks a token's row up in lora_a)."""
    extra = weight[2:]  # a mixture's experts, or ones
    if name == "token_embd.weight":
        rank = a.shape[0]
        needs = {a: (rank, weight[1], *extra), b: (rank, weight[0], *extra)}
    else:
        rank = _padded(a.shape)[1]
        needs = {a: (weight[0], rank, *extra), b: (rank, weight[1], *extra)}
    for tensor, shape in needs.items():
        if _padded(tensor.shape) != shape:
            raise _Problem(f"holds {shown(tensor.name)} of shape {list(tensor.shape)}, but the model's {name} of "
                           f"shape {list(_unpadded(weight))} needs {list(_unpadded(shape))}")


def _padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape in ggml's four dimensions."""
    return (*shape, *(1,) * (MAX_DIMS - len(shape)))


def _unpadded(shape: tuple[int, ...]) -> tuple[int, ...]:
    while len(shape) > 2 and shape[-1] == 1:
        shape = shape[:-1]
    return shape

