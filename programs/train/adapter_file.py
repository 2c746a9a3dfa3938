"""The trained reader as a file llama.cpp applies: a GGUF LoRA adapter (`general.type` adapter, `adapter.type` lora,
`adapter.lora.alpha`), one `<matrix>.lora_a` (rank x in) and `<matrix>.lora_b` (out x rank) pair per adapted
projection, in float16. llama.cpp scales each update by alpha / rank, as training does. Written atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from bookrag.atomic_file import atomic_write
from bookrag.errors import ConfigError
from programs.train.lora import LoraWeights
from programs.train.lora_config import MATRICES, LoraConfig
from programs.train.model_shape import ARCHITECTURE, ModelShape

_A, _B = ".lora_a", ".lora_b"


def write_adapter(lora: LoraWeights, path: str | Path) -> Path:
    import gguf

    def write(temp: Path) -> None:
        writer = gguf.GGUFWriter(str(temp), ARCHITECTURE)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(lora.config.alpha))
        for name, a, b in lora.named_matrices():
            writer.add_tensor(name + _A, a.detach().numpy().astype(np.float16))
            writer.add_tensor(name + _B, b.detach().numpy().astype(np.float16))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

    return atomic_write(Path(path), write)


def adapter_config(path: str | Path, shape: ModelShape, dropout: float) -> LoraConfig:
    """The LoRA settings of an adapter file (rank, alpha, matrices, layers), to train on top of it with the same ones.
    Only an adapter of the model's last layers, every one with the same matrices, can be trained on."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    names = [t.name.removesuffix(_A) for t in reader.tensors if t.name.endswith(_A)]
    adapted = {(int(name.split(".")[1]), name.split(".")[2]) for name in names}
    layers = sorted({layer for layer, _ in adapted})
    matrices = tuple(m for m in MATRICES if any(matrix == m for _, matrix in adapted))
    ranks = {t.data.shape[0] for t in reader.tensors if t.name.endswith(_A)}
    if not layers or layers != list(range(shape.layers - len(layers), shape.layers)) or len(ranks) != 1 or \
            adapted != {(layer, m) for layer in layers for m in matrices}:
        raise ConfigError(f"{path} adapts layers {layers[:3]}... with ranks {sorted(ranks)}: training goes on only from "
                          "an adapter of the model's last layers at one rank; set BOOKRAG_LOCAL_ADAPTER=none to train "
                          "from the model as it is")
    alpha = float(reader.get_field(gguf.Keys.Adapter.LORA_ALPHA).contents())
    return LoraConfig(rank=ranks.pop(), alpha=alpha, top_layers=len(layers), matrices=matrices, dropout=dropout)


def read_adapter(path: str | Path) -> tuple[float, dict[str, tuple[torch.Tensor, torch.Tensor]]]:
    """(alpha, {matrix name: (A, B)}) of an adapter file, to train on top of it."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    alpha = float(reader.get_field(gguf.Keys.Adapter.LORA_ALPHA).contents())
    tensors = {t.name: torch.from_numpy(np.array(t.data, dtype=np.float32)) for t in reader.tensors}
    return alpha, {name[: -len(_A)]: (tensors[name], tensors[name[: -len(_A)] + _B])
                   for name in tensors if name.endswith(_A)}
