"""What `ask()` returns: a JSON-serializable answer with its citations, verdict and timings."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Literal

from programs.rag.cited_text import CitedText
from programs.refusal.reasons import RefusalReason

# A title or heading, as a citation or passage shows it: a book's heading may be any length (a 100 KB one was printed
# whole under Sources, and made `--json` 300 KB).
MAX_TITLE_CHARS = 200


class ResponseMode(StrEnum):
    """Who wrote the answer."""

    GENERATED = "generated"  # the LM
    EXTRACTIVE = "extractive"  # the book's own sentences, no LM
    QUOTED = "quoted"  # one sentence of the book, shown as its words, because the LM's reply was no answer
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
    # The words of the passage that support the answer, `text[start_char_index:end_char_index]` of its entry in
    # `Response.passages` (DSPy's `Citations` fields); None where the passage holds nothing the answer says.
    cited_text: str | None = None
    start_char_index: int | None = None
    end_char_index: int | None = None


@dataclass(frozen=True)
class Section:
    """A section a refusal points to (`Response.nearest`): the closest the book comes to the question, where a reader
    would look next. No citation: nothing in it answers the question."""

    title: str
    heading: str
    url: str
    source: str
    module: str
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
    standalone_query: str | None = None  # the rewritten query, for follow-ups
    gate: dict = field(default_factory=dict)  # probability, threshold, decision
    passages: list[dict] = field(default_factory=list)  # what was read (ids, scores, text), for --verbose
    nearest: list[Section] = field(default_factory=list)  # a refused question about the book: its closest sections

    @classmethod
    def from_prediction(cls, pred, query: str, *, history=(), started: float) -> Response:
        """The checked prediction of `BookRAG.forward` as the API's answer; `started`: `time.perf_counter()` when
        the question came in."""
        return cls(
            answer=pred.answer,
            query=query,
            citations=sorted(_citations(pred), key=lambda c: c.score, reverse=True),
            confidence=pred.confidence,
            is_refusal=pred.is_refusal,
            refusal_reason=pred.refusal_reason,
            mode=pred.mode,
            retrieval_time_ms=round(pred.retrieval_time_ms, 2),
            generation_time_ms=round(pred.generation_time_ms, 2),
            total_time_ms=round((time.perf_counter() - started) * 1000, 2),
            usage=token_usage(pred),
            standalone_query=pred.query if history else None,
            gate=pred.gate,
            passages=[{"n": n, "chunk_id": p.id, "score": p.score, "dense_score": p.dense_score,
                       "sparse_score": p.sparse_score, "source": p.source, "title": shown_title(p.title),
                       "heading": shown_title(p.heading), "text": p.text}
                      for n, p in enumerate(pred.passages, start=1)],
            # the sections the retrieval ranks nearest, listed by the cosine they show, as citations are
            nearest=sorted((Section(**_place(p)) for p in pred.get("nearest", [])), key=lambda s: s.score, reverse=True),
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _citations(pred) -> list[Citation]:
    return [Citation(**_place(pred.passages[n - 1]), chunk_id=pred.passages[n - 1].id, **_words(cited))
            for n, cited in zip(pred.citations, pred.cited_texts, strict=True)]


def _words(cited: CitedText | None) -> dict:
    return asdict(cited) if cited is not None else {}


def _place(p) -> dict:
    """Where a passage sits in the book, as a citation or a nearest section shows it; its score is the cosine."""
    return {"title": shown_title(p.title), "heading": shown_title(p.heading), "url": p.url, "source": p.source,
            "module": p.module, "score": round(p.dense_score if p.dense_score is not None else p.score, 4)}


def shown_title(text: str) -> str:
    """`text`, or its first MAX_TITLE_CHARS characters ending in an ellipsis when it is longer."""
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def token_usage(pred) -> dict:
    """Prompt, completion and cached prompt tokens (a reused prefix: llama.cpp's KV cache, a provider's cache)."""
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    for usage in (pred.get_lm_usage() or {}).values():
        totals["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        totals["completion_tokens"] += int(usage.get("completion_tokens") or 0)
        totals["cached_tokens"] += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return totals
