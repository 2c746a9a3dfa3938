"""The seed-style baseline every report can be compared with: dense-only top-5 retrieval, a fixed 0.70 cosine
threshold, and the uncompiled prompt (no demos, the signatures' own instructions)."""

from __future__ import annotations

from bookrag.config import ExpandMode, Settings
from programs.rag.book_rag import BookRAG
from programs.refusal.refusal_gate import RefusalGate

BASELINE_K = 5
BASELINE_COSINE_CUT = 0.70


def baseline_program(settings: Settings, index) -> BookRAG:
    program = BookRAG.from_settings(settings.replace(top_k=BASELINE_K, expand=ExpandMode.NONE), index)
    program.search_mode = "dense"
    program.gate = RefusalGate.cosine_cut(BASELINE_COSINE_CUT)
    return program
