"""llama.cpp's KV cache of a prompt's fixed prefix, kept on disk so that a new process does not read it again.

Every answer prompt starts with the same system message and compiled demos: ~2,000 tokens that take the local
model 20-30 s to read on 2 cores. Within a process llama.cpp reuses them from its KV cache; across processes (each
`python ask.py "..."`) this store does: the first process to read a prefix saves that sequence's KV state
(~28 KB a token for the packaged model), later ones load it in well under a second.

A state is keyed by the model file, the context size and the exact prefix tokens, and holds those tokens to be
checked on load, so a stale or foreign file is never used. Writes are atomic; the store keeps its newest few files.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import uuid
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MIN_TOKENS = 256  # shorter prefixes read in a few seconds: not worth a file
KEEP = 6  # prefixes kept on disk (a compiled program and the zero-shot one need one each)
_SEQUENCE = 0  # llama-cpp-python keeps its one conversation in sequence 0
_MAGIC = b"bookrag-kv-1\n"


class PromptPrefixStore:
    def __init__(self, folder: Path, model_key: str):
        self.folder = Path(folder)
        self.model_key = model_key  # the model file and context size: another model's state is meaningless

    def path(self, prefix: list[int]) -> Path:
        digest = hashlib.sha256(self.model_key.encode() + np.asarray(prefix, dtype=np.int32).tobytes())
        return self.folder / f"{digest.hexdigest()[:32]}.kv"

    def restore(self, llama, prefix: list[int]) -> bool:
        """Load the saved KV state of `prefix` into `llama`; False when none is saved (or it does not fit)."""
        path = self.path(prefix)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return False
        tokens = np.asarray(prefix, dtype=np.int32).tobytes()
        head = len(_MAGIC) + len(tokens)
        if not data.startswith(_MAGIC) or data[len(_MAGIC):head] != tokens:
            log.warning("ignoring %s: not the state of this prompt prefix", path)
            return False
        state = (ctypes.c_uint8 * (len(data) - head)).from_buffer_copy(data, head)
        llama.reset()
        if llama_cpp().llama_state_seq_set_data(llama.ctx, state, len(state), _SEQUENCE) == 0:
            log.warning("ignoring %s: llama.cpp could not load it", path)
            return False
        llama.input_ids[: len(prefix)] = prefix
        llama.n_tokens = len(prefix)
        os.utime(path)  # recently used: kept longest
        return True

    def save(self, llama, prefix: list[int]) -> None:
        """Save the KV state of `llama`, which must hold exactly `prefix`."""
        size = llama_cpp().llama_state_seq_get_size(llama.ctx, _SEQUENCE)
        state = (ctypes.c_uint8 * size)()
        written = llama_cpp().llama_state_seq_get_data(llama.ctx, state, size, _SEQUENCE)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(prefix)
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
        try:
            with partial.open("wb") as out:
                out.write(_MAGIC + np.asarray(prefix, dtype=np.int32).tobytes())
                out.write(memoryview(state)[:written])
            os.replace(partial, path)
        except OSError as exc:  # a full or read-only disk costs speed, never an answer
            log.warning("could not save the prompt prefix to %s: %s", path, exc)
        finally:
            partial.unlink(missing_ok=True)
        self._prune()

    def _prune(self) -> None:
        files = sorted(self.folder.glob("*.kv"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP:]:
            old.unlink(missing_ok=True)


def llama_cpp():
    import llama_cpp

    return llama_cpp
