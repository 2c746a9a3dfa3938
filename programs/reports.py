"""Evaluation reports over a labeled question set."""

from __future__ import annotations

import time
from collections import defaultdict

from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.metrics import recall_at_k, reciprocal_rank
from retrievers.retriever import QdrantRetriever


def retrieval_questions(questions: list[Question]) -> list[Question]:
    """Answerable questions that go through retrieval (selected-text questions answer from the selection)."""
    return [q for q in questions if q.answerable and q.gold_sources and not q.selected_text]


def retrieval_report(retriever: QdrantRetriever, questions: list[Question], k: int = 5, mode: str = "hybrid",
                     mmr: bool = False, progress: bool | None = None) -> dict:
    """recall@k (a gold source among the top k), MRR, per-category recall, and query latency."""
    rows = retrieval_questions(questions)
    recalls, ranks, latencies = [], [], []
    by_category: dict[str, list[float]] = defaultdict(list)
    with progress_bar(f"Retrieval ({mode})", len(rows), progress) as bar:
        for q in rows:
            started = time.perf_counter()
            passages = retriever.search(q.search_text, k=k, mode=mode, mmr=mmr)
            latencies.append((time.perf_counter() - started) * 1000)
            hit = recall_at_k(passages, q.gold_sources, k)
            recalls.append(hit)
            ranks.append(reciprocal_rank(passages, q.gold_sources))
            by_category[q.category or "uncategorized"].append(hit)
            bar.advance()
    n = len(rows)
    return {
        "n": n,
        "k": k,
        "mode": mode,
        "mmr": mmr,
        "recall_at_k": sum(recalls) / n if n else 0.0,
        "mrr": sum(ranks) / n if n else 0.0,
        "per_category": {c: {"n": len(v), "recall_at_k": sum(v) / len(v)} for c, v in sorted(by_category.items())},
        "latency_p50_ms": percentile(latencies, 50),
        "latency_p95_ms": percentile(latencies, 95),
    }


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def program_report(program, questions: list[Question], progress: bool | None = None) -> dict:
    """Answers, refusals and citations of a BookRAG program over labeled questions, with one row each."""
    from programs.metrics import key_fact_recall

    rows = []
    with progress_bar("Questions", len(questions), progress) as bar:
        for q in questions:
            r = program.ask(q.question, history=list(q.history), selected_text=q.selected_text or None)
            retrieved = {p["chunk_id"] for p in r.passages}
            cited_sources = {c.source for c in r.citations}
            rows.append({
                "id": q.id, "category": q.category, "answerable": q.answerable, "refused": r.is_refusal,
                "correct_refusal": r.is_refusal != q.answerable,
                "key_facts": key_fact_recall(q.key_facts, r.answer) if q.answerable else None,
                "citations_valid": all(c.chunk_id in retrieved for c in r.citations) or q.selected_text != "",
                "gold_cited": bool(cited_sources & set(q.gold_sources)) if q.answerable and q.gold_sources else None,
                "mode": r.mode, "gate_probability": r.gate.get("probability"), "latency_ms": r.total_time_ms,
                "tokens": sum(r.usage.values()) if r.usage else 0, "answer": r.answer,
                "citations": [c.source for c in r.citations],
            })
            bar.advance()
    answerable = [r for r in rows if r["answerable"]]
    refuse = [r for r in rows if not r["answerable"]]
    answered = [r for r in answerable if not r["refused"]]
    with_gold = [r for r in answered if r["gold_cited"] is not None]

    def share(items, test) -> float:
        return sum(1 for r in items if test(r)) / len(items) if items else 0.0

    report = {
        "n": len(rows),
        "answer_accuracy": share(answerable, lambda r: not r["refused"] and r["key_facts"] == 1.0),
        "key_facts_in_answers": share(answered, lambda r: r["key_facts"] == 1.0),
        "refusal_recall": share(refuse, lambda r: r["refused"]),
        "false_refusal_rate": share(answerable, lambda r: r["refused"]),
        "citation_validity": share([r for r in rows if not r["refused"]], lambda r: r["citations_valid"]) or 1.0,
        "gold_citation_rate": share(with_gold, lambda r: r["gold_cited"]),
        "latency_p50_ms": percentile([r["latency_ms"] for r in rows], 50),
        "latency_p95_ms": percentile([r["latency_ms"] for r in rows], 95),
        "tokens_per_question": sum(r["tokens"] for r in rows) / len(rows) if rows else 0.0,
    }
    report["combined"] = (report["answer_accuracy"] + report["refusal_recall"] + report["citation_validity"]) / 3
    report["rows"] = rows
    return report
