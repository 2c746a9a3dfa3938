"""What `ask()` returns: a JSON-serializable answer with its citations, verdict and timings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Literal

from programs.refusal.reasons import RefusalReason


class ResponseMode(StrEnum):
    """Who wrote the answer."""

    GENERATED = "generated"  # the LM
    EXTRACTIVE = "extractive"  # the book's own sentences, no LM
    EXTRACTIVE_FALLBACK = "extractive-fallback"  # the book's sentences, because the LM's reply was unreadable
    REFUSED = "refused"


@dataclass(frozen=True)
class Citation:
    title: str
    heading: str
    url: str
    source: str
    module: str
    chunk_id: str
    score: float


@dataclass
class Response:
    answer: str
    query: str
    citations: list[Citation] = field(default_factory=list)
    confidence: Literal["high", "low", "none"] = "none"
    is_refusal: bool = False
    refusal_reason: RefusalReason | None = None
    mode: ResponseMode = ResponseMode.REFUSED
    retrieval_time_ms: float = 0.0
    generation_time_ms: float = 0.0
    total_time_ms: float = 0.0
    usage: dict = field(default_factory=dict)  # prompt_tokens, completion_tokens
    error: str | None = None
    standalone_query: str | None = None  # the rewritten query, for follow-ups
    gate: dict = field(default_factory=dict)  # probability, threshold, decision
    passages: list[dict] = field(default_factory=list)  # what was retrieved (ids, scores), for --verbose

    def to_dict(self) -> dict:
        return asdict(self)
