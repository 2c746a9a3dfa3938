"""The trained reader as a file llama.cpp applies: a GGUF LoRA adapter (`general.type` adapter, `adapter.type` lora,
`adapter.lora.alpha`), one `<matrix>.lora_a` (rank x in) and `<matrix>.lora_b` (out x rank) pair per adapted
projection, in float16. llama.cpp scales each update by alpha / rank, as training does. Written atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from bookrag.atomic_file import atomic_write
from programs.train.lora import LoraWeights
from programs.train.model_shape import ARCHITECTURE

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


def read_adapter(path: str | Path) -> tuple[float, dict[str, tuple[torch.Tensor, torch.Tensor]]]:
    """(alpha, {matrix name: (A, B)}) of an adapter file, to train on top of it."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    alpha = float(reader.get_field(gguf.Keys.Adapter.LORA_ALPHA).contents())
    tensors = {t.name: torch.from_numpy(np.array(t.data, dtype=np.float32)) for t in reader.tensors}
    return alpha, {name[: -len(_A)]: (tensors[name], tensors[name[: -len(_A)] + _B])
                   for name in tensors if name.endswith(_A)}
