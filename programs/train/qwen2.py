"""The qwen2 decoder in torch, with LoRA: the forward pass llama.cpp runs, written out so that training can start
at any layer and share a prompt prefix between examples.

Two things make training affordable on 2 cores. The layers below the adapted ones never change, so their output
for an example is computed once (`run` over the frozen layers, without gradients) and the training steps start
from it. And every example starts with the same system prompt: its keys and values are computed once per batch
(`prefix`) and every example of the batch attends to them.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from programs.train.lora import LoraWeights
from programs.train.lora_config import MATRICES
from programs.train.model_shape import ModelShape

KeyValues = tuple[torch.Tensor, torch.Tensor]  # (batch 1, kv heads, positions, head dim) each


class Qwen2Decoder:
    """`dtype`: the precision the frozen weights and activations are held in (programs/train/cpu.py chooses it); the
    LoRA weights and their updates stay float32, and so does the loss."""

    def __init__(self, shape: ModelShape, tensors: dict[str, torch.Tensor], lora: LoraWeights | None = None,
                 dtype: torch.dtype = torch.float32):
        self.shape, self.lora, self.dtype = shape, lora, dtype
        # The vocabulary's projection stays float32: the loss reads a few rows of it, and bfloat16 rounds logits of
        # 20-30 to steps of 0.125, the size of a reply's whole loss once learned.
        self.w = {name: tensor if name == "output.weight" else tensor.to(dtype) for name, tensor in tensors.items()}
        self.packed: dict[str, object] = {}  # int8 weights of the frozen layers (`quantize_frozen`), by name
        inverse = 1.0 / shape.rope_base ** (torch.arange(0, shape.head_dim, 2, dtype=torch.float64) / shape.head_dim)
        self.inverse_frequencies = inverse

    def quantize_frozen(self, layers: range) -> None:
        """Run `layers`' projections with int8 weights from now on (`packed_int8`), and let their other copies go. For
        the layers below the adapted ones, which no gradient crosses: the packaged model's 20 lowest ran 2.9x faster
        than in float32 and 1.3x faster than in bfloat16, 6.5% off float32's output (benchmarks/frozen_precision.py)."""
        for layer in layers:
            for matrix in MATRICES:
                name = f"blk.{layer}.{matrix}.weight"
                self.packed[name] = packed_int8(self.w.pop(name))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.w["token_embd.weight"][ids]

    def run(self, h: torch.Tensor, layers: range, start: int, prefix: list[KeyValues] | None = None,
            outputs: torch.Tensor | None = None) -> tuple[torch.Tensor, list[KeyValues]]:
        """Hidden states `h` (batch, positions, hidden) through `layers`, the first position at `start`; each layer's
        queries also attend to its `prefix` keys and values (positions 0..start-1). Returns the output and each
        layer's own keys and values. `outputs` (batch, n): the only positions whose output is wanted; the last layer
        then computes its queries and MLP for those alone (the loss reads a reply's few positions)."""
        cos, sin = self._rotary(start, h.shape[1])
        own = []
        for n, layer in enumerate(layers):
            wanted = outputs if n == len(layers) - 1 else None
            h, kv = self._layer(layer, h, cos, sin, prefix[n] if prefix else None, wanted)
            own.append(kv)
        return h, own

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return _rms_norm(h, self.w["output_norm.weight"], self.shape.norm_eps).float() @ self.w["output.weight"].T

    def _layer(self, layer: int, h: torch.Tensor, cos, sin, prefix: KeyValues | None, wanted: torch.Tensor | None):
        s, w = self.shape, self.w
        batch, length, _ = h.shape
        x = _rms_norm(h, w[f"blk.{layer}.attn_norm.weight"], s.norm_eps)
        k = self._linear(layer, "attn_k", x).view(batch, length, s.kv_heads, s.head_dim).transpose(1, 2)
        v = self._linear(layer, "attn_v", x).view(batch, length, s.kv_heads, s.head_dim).transpose(1, 2)
        k = _rotate(k, cos, sin)
        rows = torch.arange(length).expand(batch, length) if wanted is None else wanted  # (batch, queries)
        if wanted is not None:
            h, x = _gather(h, wanted), _gather(x, wanted)
            cos, sin = cos[wanted].unsqueeze(1), sin[wanted].unsqueeze(1)
        queries = x.shape[1]
        q = self._linear(layer, "attn_q", x).view(batch, queries, s.heads, s.head_dim).transpose(1, 2)
        q = _rotate(q, cos, sin)
        held = prefix[0].shape[2] if prefix is not None else 0
        if prefix is not None:
            k = torch.cat([prefix[0].expand(batch, -1, -1, -1), k], dim=2)
            v = torch.cat([prefix[1].expand(batch, -1, -1, -1), v], dim=2)
        if wanted is None and prefix is None:
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:  # a query sees the prefix and its own position and those before it
            mask = torch.arange(held + length) <= (rows + held).unsqueeze(-1)  # (batch, queries, keys)
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.unsqueeze(1), enable_gqa=True)
        own = (k[:, :, held:], v[:, :, held:])
        attended = attended.transpose(1, 2).reshape(batch, queries, s.hidden)
        h = h + self._linear(layer, "attn_output", attended)
        x = _rms_norm(h, w[f"blk.{layer}.ffn_norm.weight"], s.norm_eps)
        gated = F.silu(self._linear(layer, "ffn_gate", x)) * self._linear(layer, "ffn_up", x)
        return h + self._linear(layer, "ffn_down", gated), own

    def _linear(self, layer: int, matrix: str, x: torch.Tensor) -> torch.Tensor:
        name = f"blk.{layer}.{matrix}.weight"
        if name in self.packed:
            y = torch.ops.quantized.linear_dynamic(x.float(), self.packed[name]).to(x.dtype)
        else:
            y = x @ self.w[name].T
        bias = self.w.get(f"blk.{layer}.{matrix}.bias")
        if bias is not None:
            y = y + bias
        if self.lora is not None and (delta := self.lora.delta(layer, matrix, x.float())) is not None:
            y = y + delta.to(y.dtype)
        return y

    def _rotary(self, start: int, length: int):
        positions = torch.arange(start, start + length, dtype=torch.float64)
        angles = torch.outer(positions, self.inverse_frequencies)
        angles = torch.cat([angles, angles], dim=-1)
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)


def packed_int8(weight: torch.Tensor):
    """`weight` (out, in) in int8 per output channel, packed for torch's dynamic quantized linear
    (`torch.ops.quantized.linear_dynamic`, which quantizes the activations at each call)."""
    weight = weight.float()
    with warnings.catch_warnings():  # torch deprecates the quantized tensor API it still runs
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_channel(weight, weight.abs().amax(dim=1).clamp_min(1e-8) / 127,
                                               torch.zeros(len(weight), dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(quantized, None)


def _gather(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """x[b, rows[b, i]] for each batch row b: (batch, n, hidden)."""
    return torch.gather(x, 1, rows.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """In float32 whatever the precision: a mean of squares in bfloat16 loses the small ones."""
    wide = x.float()
    return (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding, NEOX style (the two halves of each head rotate together), as qwen2 uses."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin
