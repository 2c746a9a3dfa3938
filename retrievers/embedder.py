"""What every embedder offers (retrievers/backends.py picks one from the settings)."""

from __future__ import annotations

from typing import Protocol


class Embedder(Protocol):
    name: str  # short tag that goes into the collection name, e.g. "minilm384"
    model_id: str  # the model's full name, recorded in manifests
    dim: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...
