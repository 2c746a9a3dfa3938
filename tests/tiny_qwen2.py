"""A tiny random qwen2 model for the tests of the reader's training: its shape, its weights as named in a GGUF,
and LoRA weights that change what it computes. Import it after `pytest.importorskip("torch")`."""

from __future__ import annotations

import torch

from programs.train.lora import LoraWeights
from programs.train.lora_config import MATRICES, LoraConfig, matrix_shape
from programs.train.model_shape import ModelShape

SHAPE = ModelShape(layers=4, hidden=32, ffn=48, heads=4, kv_heads=2, rope_base=10000.0, norm_eps=1e-6, vocab=40)


def tiny_weights(shape: ModelShape = SHAPE, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights named as in a qwen2 GGUF."""
    g = torch.Generator().manual_seed(seed)
    w = {"token_embd.weight": torch.randn(shape.vocab, shape.hidden, generator=g),
         "output_norm.weight": 1 + 0.1 * torch.randn(shape.hidden, generator=g),
         "output.weight": torch.randn(shape.vocab, shape.hidden, generator=g) / shape.hidden ** 0.5}
    for layer in range(shape.layers):
        for norm in ("attn_norm", "ffn_norm"):
            w[f"blk.{layer}.{norm}.weight"] = 1 + 0.1 * torch.randn(shape.hidden, generator=g)
        for matrix in MATRICES:
            out_features, in_features = matrix_shape(shape, matrix)
            w[f"blk.{layer}.{matrix}.weight"] = torch.randn(out_features, in_features, generator=g) / in_features ** 0.5
        for matrix in ("attn_q", "attn_k", "attn_v"):
            w[f"blk.{layer}.{matrix}.bias"] = 0.1 * torch.randn(matrix_shape(shape, matrix)[0], generator=g)
    return w


def lora_with_updates(config: LoraConfig, seed: int = 1) -> LoraWeights:
    lora = LoraWeights(config, SHAPE, seed=seed)
    with torch.no_grad():
        for b in lora.b.values():
            b.normal_(0, 0.1, generator=torch.Generator().manual_seed(seed))
    return lora.eval()
