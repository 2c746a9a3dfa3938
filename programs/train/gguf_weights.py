"""A Qwen2 chat GGUF's weights as torch tensors: every tensor dequantized to float32. Training reads the very weights
llama.cpp answers with (the packaged Q4_K_M model), so the adapter learns the corrections of the quantized model it is
applied to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from programs.train.model_shape import ModelShape, model_shape


def read_gguf(path: str | Path, progress=None) -> tuple[ModelShape, dict[str, torch.Tensor]]:
    """(shape, tensors by GGUF name) of a qwen2 GGUF. `progress(done, total)` is called per tensor."""
    import gguf

    shape = model_shape(path)  # first: a file of another kind is refused by name, not by the gguf package's reader
    reader = gguf.GGUFReader(str(path))
    tensors = {}
    for done, tensor in enumerate(reader.tensors, start=1):
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        tensors[tensor.name] = torch.from_numpy(np.array(values, dtype=np.float32))
        if progress is not None:
            progress(done, len(reader.tensors))
    tensors.setdefault("output.weight", tensors["token_embd.weight"])  # tied embeddings
    return shape, tensors


