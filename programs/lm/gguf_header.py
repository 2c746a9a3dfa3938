"""A GGUF file's header: its metadata and its tensors' names, shapes, types and places, read without the tensors.

Why not the `gguf` package: it is the training's dependency, not the runtime's, and its reader parses every array
into numpy objects: 22 s and 540 MB for the packaged model's tokenizer (measured). This one skips arrays and long
strings, reads with small buffered reads (no mmap: an 8 GB file under a memory limit is no problem), and says what
is wrong with a file that is not a well-formed GGUF, on which llama.cpp may crash. Layout (GGUF v2 and v3,
little-endian): magic, version, tensor count, metadata count, the metadata's key/type/value entries, the tensor
infos, padding to the alignment, the tensors' data.

A header is bounded (entries, tensors, key and string lengths, strings walked, bytes), far above a real one's, so a
crafted file is refused after bounded work: one of 64 MB of tiny metadata entries took 16-40 s and 0.49 GB to read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bookrag.terminal_text import printable

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # what llama.cpp reads
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
MAX_NAME = 63  # ggml's GGML_MAX_NAME, less its terminating zero: llama.cpp refuses a longer tensor name
KEPT_STRING = 1 << 20  # longer metadata strings are skipped (a GGUF may carry its tokenizer's JSON, megabytes)
# The bounds, against the packaged 1.1 GB model's header: 339 tensors, 26 metadata entries, 303k strings in its
# tokenizer's arrays (tokens and merges), 6 MB, read in 0.12 s; an adapter's is smaller still (2*28*7 tensors at most).
MAX_METADATA = 1 << 12  # metadata entries
MAX_TENSORS = 1 << 14  # tensor infos (the largest models have about a thousand)
MAX_KEY = (1 << 16) - 1  # bytes in a metadata key: GGUF's own bound
MAX_STRINGS = 1 << 22  # strings in all the metadata's arrays together: under two seconds to walk
MAX_HEADER = 1 << 26  # bytes before the tensors' data

# GGUF value types: the scalars' struct formats, and the two with a length.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
UINT32, FLOAT32, STRING, ARRAY = 4, 6, 8, 9
_LAYOUTS = {fmt: struct.Struct(fmt) for fmt in {*_SCALARS.values(), "<Q"}}
_ITEM_TYPES = {*_SCALARS, STRING}  # what an array holds: GGUF allows arrays of arrays, llama.cpp does not


class NotGGUF(ValueError):
    """The file is not a GGUF that llama.cpp reads; the message says what is wrong with it."""


@dataclass(frozen=True)
class Skipped:
    """A metadata value not kept: an array (its items' type and count), or a string of over KEPT_STRING bytes."""

    item_type: int
    length: int


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml's order: shape[0] is the row length (a weight's inputs), as gguf-dump shows it
    ggml_type: int
    offset: int  # from the start of the data section


@dataclass(frozen=True)
class GGUFHeader:
    metadata: dict[str, object]  # value by key: a number, a string, or `Skipped`
    value_types: dict[str, int]  # the GGUF value type of each key
    tensors: dict[str, TensorInfo]  # in the file's order
    alignment: int  # of each tensor's data
    data_start: int  # where the tensors' data begins
    size: int  # the file's size in bytes

    def string(self, key: str) -> str | None:
        """The metadata string at `key`; None when it is missing, not a string, or skipped."""
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None


def read_gguf_header(path: str | Path) -> GGUFHeader:
    """The header of the GGUF at `path`. Raises NotGGUF naming what is wrong (not the path: the caller names it),
    OSError when the file cannot be read."""
    with open(path, "rb") as file:
        return _HeaderReader(file).read()


def shown(name: str) -> str:
    """A name from a file, for a message: cut short, its control characters inert."""
    return printable(name if len(name) <= 80 else name[:80] + "...")


def aligned(offset: int, alignment: int) -> int:
    """`offset` rounded up to a multiple of `alignment`."""
    return -(-offset // alignment) * alignment


class _HeaderReader:
    def __init__(self, file: BinaryIO):
        self.file = file
        self.size = file.seek(0, 2)
        self.position = file.seek(0)  # kept here: the file's tell() is a system call
        self.strings = 0  # walked in the metadata's arrays

    def read(self) -> GGUFHeader:
        if self.size == 0:
            raise NotGGUF("is empty")
        if self.bytes(min(4, self.size), "the magic") != MAGIC:
            raise NotGGUF("is not a GGUF file (it does not start with GGUF)")
        version = self.scalar("<I", "the version")
        if version not in VERSIONS:
            raise NotGGUF(f"is GGUF version {version}; llama.cpp reads versions {VERSIONS[0]} and {VERSIONS[-1]}")
        tensor_count, kv_count = self.scalar("<Q", "the tensor count"), self.scalar("<Q", "the metadata count")
        _at_most(kv_count, MAX_METADATA, "metadata entries")
        _at_most(tensor_count, MAX_TENSORS, "tensors")
        metadata, value_types = {}, {}
        for _ in range(kv_count):
            length = self.scalar("<Q", "the length of a metadata key")
            if length > MAX_KEY:
                raise NotGGUF(f"has a metadata key {length:,} bytes long; GGUF's keys are at most {MAX_KEY:,}")
            key = self.text(length, "a metadata key")
            if key in metadata:
                raise NotGGUF(f"has the metadata key {shown(key)} twice")
            value_types[key] = self.scalar("<I", f"the type of {shown(key)}")
            metadata[key] = self.value(value_types[key], key)
        tensors = {}
        for _ in range(tensor_count):
            tensor = self.tensor_info()
            if tensor.name in tensors:
                raise NotGGUF(f"has the tensor {shown(tensor.name)} twice")
            tensors[tensor.name] = tensor
        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if value_types.get("general.alignment", UINT32) != UINT32 or alignment <= 0 or alignment & (alignment - 1):
            raise NotGGUF(f"has general.alignment {alignment!r}: it must be a power of two (uint32)")
        return GGUFHeader(metadata, value_types, tensors, alignment, aligned(self.position, alignment), self.size)

    def value(self, value_type: int, key: str) -> object:
        if value_type == STRING:
            return self.string(f"the value of {shown(key)}")
        if value_type == ARRAY:
            item_type, length = self.scalar("<I", f"the item type of {shown(key)}"), self.scalar("<Q", "a length")
            if item_type not in _ITEM_TYPES:
                raise NotGGUF(f"has the metadata array {shown(key)} of items of type {item_type}, which llama.cpp "
                              "does not read")
            what = f"the array {shown(key)}"
            if item_type == STRING:
                self.walk_strings(length, what)
            else:
                self.skip(length * _LAYOUTS[_SCALARS[item_type]].size, what)
            return Skipped(item_type, length)
        if value_type not in _SCALARS:
            raise NotGGUF(f"has the metadata key {shown(key)} of type {value_type}, which GGUF does not have")
        return self.scalar(_SCALARS[value_type], f"the value of {shown(key)}")

    def walk_strings(self, count: int, what: str) -> None:
        """Past `count` strings of an array, not kept: each has its own length. The loop that runs most (303k times
        for the packaged model), so it is lean."""
        self.strings += count
        if self.strings > MAX_STRINGS:
            raise NotGGUF(f"has over {MAX_STRINGS:,} strings in its metadata arrays ({what} has {count:,}); a "
                          "model's tokenizer has a few hundred thousand")
        read, unpack = self.file.read, _LAYOUTS["<Q"].unpack
        for _ in range(count):
            self.within_file(8, what)
            self.skip(unpack(read(8))[0], what)

    def tensor_info(self) -> TensorInfo:
        length = self.scalar("<Q", "the length of a tensor's name")
        if length > MAX_NAME:
            raise NotGGUF(f"has a tensor name over {MAX_NAME} bytes long, which llama.cpp refuses")
        name = self.text(length, "a tensor's name")
        dims = self.scalar("<I", f"the dimensions of {shown(name)}")
        if not 1 <= dims <= MAX_DIMS:
            raise NotGGUF(f"has the tensor {shown(name)} of {dims} dimensions; ggml has 1 to {MAX_DIMS}")
        shape = tuple(self.scalar("<q", f"the shape of {shown(name)}") for _ in range(dims))
        if any(n < 0 for n in shape):
            raise NotGGUF(f"has the tensor {shown(name)} of shape {list(shape)}")
        ggml_type = self.scalar("<I", f"the type of {shown(name)}")
        return TensorInfo(name, shape, ggml_type, self.scalar("<Q", f"the offset of {shown(name)}"))

    def string(self, what: str) -> str | Skipped:
        """A string, or `Skipped` when it is longer than KEPT_STRING bytes."""
        length = self.scalar("<Q", f"the length of {what}")
        if length > KEPT_STRING:
            self.skip(length, what)
            return Skipped(STRING, length)
        return self.text(length, what)

    def text(self, length: int, what: str) -> str:
        return self.bytes(length, what).decode("utf-8", "backslashreplace")

    def scalar(self, fmt: str, what: str):
        layout = _LAYOUTS[fmt]
        return layout.unpack(self.bytes(layout.size, what))[0]

    def bytes(self, count: int, what: str) -> bytes:
        self.within_file(count, what)
        return self.file.read(count)

    def skip(self, count: int, what: str) -> None:
        self.within_file(count, what)
        if count < 1 << 16:  # a short read beats a seek, which drops the read buffer
            self.file.read(count)
        else:
            self.file.seek(count, 1)

    def within_file(self, count: int, what: str) -> None:
        if count > self.size - self.position:
            raise NotGGUF(f"ends before {what} does (truncated, or not a GGUF file)")
        if count > MAX_HEADER - self.position:
            raise NotGGUF(f"has a header over {MAX_HEADER >> 20} MiB (at {what}); a model's is a few MiB")
        self.position += count


def _at_most(count: int, bound: int, what: str) -> None:
    if count > bound:
        raise NotGGUF(f"declares {count:,} {what}; no model or adapter has over {bound:,}")
