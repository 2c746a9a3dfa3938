"""Chunking, embedders, and the Qdrant index and retriever (dense + BM25 sparse + RRF fusion)."""

from retrievers.book_index import BookIndex
from retrievers.passage import Passage
from retrievers.retriever import QdrantRetriever, Retriever

__all__ = ["BookIndex", "Passage", "QdrantRetriever", "Retriever"]
