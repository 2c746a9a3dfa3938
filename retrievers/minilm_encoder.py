"""all-MiniLM-L6-v2's forward pass in numpy: a 6-layer BERT encoder, mean pooling, L2 normalisation.

Reproduces sentence-transformers' vectors for this model (checked by tests/test_minilm.py) without torch, whose
import and model load cost a new process ~8 s.

The texts of a batch are packed one after another instead of padded: every step but attention works token by
token, and attention runs per text over that text's own tokens, which is what the attention mask does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The feed-forward step runs on this many tokens at a time: its (rows, 1536) intermediate then stays in the CPU
# cache through GELU's dozen passes instead of streaming tens of MB through memory each time.
FFN_ROWS = 256

# GELU(x) = x * Phi(x), Phi the normal CDF, via Abramowitz & Stegun 7.1.26 (erf within 1.5e-7). BERT's "gelu"
# is this exact erf form (the tanh approximation is off by up to ~1e-3), and numpy has no erf. Measured on
# [-12, 12] against math.erf in float64: max abs error 3.3e-7, torch's float32 GELU 3.8e-7.
_P = np.float32(0.3275911 / math.sqrt(2))
_A = [np.float32(a / 2) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]


def gelu_(x: np.ndarray) -> np.ndarray:
    """GELU in place. Written as max(x, 0) - |x| * (1 - Phi(|x|)), which needs no sign cases, and in place
    because allocating a fresh array per operation cost more than the arithmetic."""
    a = np.abs(x)
    t = a * _P
    t += 1
    np.reciprocal(t, out=t)
    tail = t * _A[-1]  # Horner: (((a5 t + a4) t + a3) t + a2) t + a1) t, halved
    for coefficient in reversed(_A[:-1]):
        tail += coefficient
        tail *= t
    gauss = np.square(x, out=t)
    gauss *= np.float32(-0.5)
    tail *= np.exp(gauss, out=gauss)
    tail *= a
    np.maximum(x, 0, out=x)
    x -= tail
    return x


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred *= 1 / np.sqrt(var + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


def softmax_(x: np.ndarray) -> np.ndarray:
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


@dataclass
class Layer:
    """One transformer block; matrices stored as (in, out) so a step is `x @ w + b`."""

    qkv_w: np.ndarray  # query, key and value side by side: one matmul instead of three
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray

    @classmethod
    def from_weights(cls, w: dict[str, np.ndarray], prefix: str) -> Layer:
        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
            return np.ascontiguousarray(w[f"{prefix}{name}.weight"].T), w[f"{prefix}{name}.bias"]

        q, k, v = (linear(f"attention.self.{name}") for name in ("query", "key", "value"))
        return cls(
            np.ascontiguousarray(np.concatenate([q[0], k[0], v[0]], axis=1)),
            np.concatenate([q[1], k[1], v[1]]),
            *linear("attention.output.dense"),
            w[f"{prefix}attention.output.LayerNorm.weight"],
            w[f"{prefix}attention.output.LayerNorm.bias"],
            *linear("intermediate.dense"),
            *linear("output.dense"),
            w[f"{prefix}output.LayerNorm.weight"],
            w[f"{prefix}output.LayerNorm.bias"],
        )


class BertEncoder:
    """Token ids in (one list per text, [CLS] ... [SEP]), one unit-length mean-pooled vector per text out."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict):
        plain_bert = config.get("position_embedding_type", "absolute") == "absolute"
        if config.get("hidden_act") != "gelu" or not plain_bert:
            raise ValueError("not a plain BERT encoder (gelu activation, absolute positions)")
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        # One segment per text: token type 0 throughout.
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.ln_w = weights["embeddings.LayerNorm.weight"]
        self.ln_b = weights["embeddings.LayerNorm.bias"]
        n_layers = config["num_hidden_layers"]
        self.layers = [Layer.from_weights(weights, f"encoder.layer.{i}.") for i in range(n_layers)]

    @classmethod
    def from_folder(cls, folder: Path) -> BertEncoder:
        from safetensors.numpy import load_file

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return cls(load_file(str(folder / "model.safetensors")), config)

    def __call__(self, texts: list[list[int]]) -> np.ndarray:
        lengths = np.array([len(ids) for ids in texts])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self.words[np.concatenate(texts)] + self.positions[positions] + self.token_type
        x = layer_norm(x, self.ln_w, self.ln_b, self.eps)
        spans = [slice(s, s + n) for s, n in zip(starts.tolist(), lengths.tolist())]
        for layer in self.layers:
            x = layer_norm(self._attention(layer, x, spans) + x, layer.ln1_w, layer.ln1_b, self.eps)
            x = layer_norm(self._feed_forward(layer, x) + x, layer.ln2_w, layer.ln2_b, self.eps)
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def _attention(self, layer: Layer, x: np.ndarray, spans: list[slice]) -> np.ndarray:
        hidden = x.shape[1]
        head_dim = hidden // self.heads
        scale = np.float32(1 / math.sqrt(head_dim))
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        context = np.empty_like(x)
        for span in spans:
            # (tokens, 3 * hidden) -> q, k, v of shape (heads, tokens, head_dim)
            q, k, v = qkv[span].reshape(-1, 3, self.heads, head_dim).transpose(1, 2, 0, 3)
            weights = softmax_((q @ k.transpose(0, 2, 1)) * scale)
            context[span] = (weights @ v).transpose(1, 0, 2).reshape(-1, hidden)
        out = context @ layer.out_w
        out += layer.out_b
        return out

    def _feed_forward(self, layer: Layer, x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        for start in range(0, len(x), FFN_ROWS):
            rows = slice(start, start + FFN_ROWS)
            up = x[rows] @ layer.up_w
            up += layer.up_b
            out[rows] = gelu_(up) @ layer.down_w
        out += layer.down_b
        return out
