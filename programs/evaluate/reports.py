"""Evaluation reports over a labeled question set."""

from __future__ import annotations

import time
from collections import defaultdict

import dspy

from bookrag.config import DEFAULT_SEARCH_MODE, DEFAULT_TOP_K, SearchMode
from bookrag.errors import BookragError, ConfigError
from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.evaluate import metrics
from programs.evaluate.figures import FIGURES, GROUP
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.styles import style_group
from programs.rag.response import ResponseMode, token_usage
from programs.refusal.reasons import REFUSED_AFTER_LM, RefusalReason
from retrievers.retriever import Retriever


def retrieval_questions(questions: list[Question]) -> list[Question]:
    """Answerable questions that go through retrieval (selected-text questions answer from the selection)."""
    return [q for q in questions if q.answerable and q.gold_sources and not q.selected_text]


def retrieval_report(retriever: Retriever, questions: list[Question], k: int = DEFAULT_TOP_K,
                     mode: SearchMode = DEFAULT_SEARCH_MODE, mmr: bool = False, progress: bool | None = None) -> dict:
    """recall@k (a gold source among the top k), MRR, per-category recall, and query latency."""
    rows = retrieval_questions(questions)
    recalls, ranks, latencies = [], [], []
    by_category: dict[str, list[float]] = defaultdict(list)
    with progress_bar(f"Retrieval ({mode})", len(rows), progress) as bar:
        for q in rows:
            started = time.perf_counter()
            passages = retriever.search(q.search_text, k=k, mode=mode, mmr=mmr)
            latencies.append((time.perf_counter() - started) * 1000)
            hit = metrics.recall_at_k(passages, q.gold_sources, k)
            recalls.append(hit)
            ranks.append(metrics.reciprocal_rank(passages, q.gold_sources))
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


def program_report(program, questions: list[Question], progress: bool | None = None, judge=None,
                   threads: int = 1, finished: list | None = None) -> dict:
    """Run a BookRAG program over labeled questions; score each prediction with programs.evaluate.metrics and aggregate.

    Rates are in 0..1. `judge` and `threads`: as in `question_rows`. `finished`: a list that gets each row as it
    is scored, so a run stopped half-way still has the rows it finished (`report_of` them).
    """
    return report_of(program, question_rows(program, questions, progress, judge, threads, finished=finished))


def report_of(program, rows: list[QuestionRow]) -> dict:
    """The report of `program` over scored rows: every question, or those finished before a stop."""
    return {**aggregate(rows), "k": program.top_k, "search_mode": program.search_mode,
            "gate": program.gate.dump_state(), "rows": [row.to_dict() for row in rows]}


def in_question_order(rows: list[QuestionRow], questions: list[Question]) -> list[QuestionRow]:
    """Rows finished on several threads, in the order of their questions."""
    order = {q.id: i for i, q in enumerate(questions)}
    return sorted(rows, key=lambda row: order[row.id])


def question_rows(program, questions: list[Question], progress: bool | None = None, judge=None, threads: int = 1,
                  description: str = "Questions", finished: list | None = None) -> list[QuestionRow]:
    """One scored row per question, in question order; `description` names the progress bar.

    `judge`: a hosted dspy.LM for LM-judged semantic F1 on answerable questions (optional).
    `threads`: questions answered at once, for a hosted LM that serves calls in parallel (DSPy's ParallelExecutor,
    which carries the DSPy settings into its threads). A question the LM fails on is a failed row either way; any
    other exception is a bug and stops the run. `finished`: as in `program_report`.
    """
    finished = [] if finished is None else finished
    with progress_bar(description, len(questions), progress) as bar:

        def run(question: Question) -> QuestionRow:
            row = question_row(program, question, judge)
            finished.append(row)
            bar.advance()
            return row

        if threads == 1:
            return [run(q) for q in questions]
        return _in_parallel(run, questions, threads)


def _in_parallel(run, questions: list[Question], threads: int) -> list[QuestionRow]:
    """`run` over the questions on `threads` threads, in question order. The first exception stops the run and is
    raised as it was (ParallelExecutor would replace it with a generic one)."""
    from dspy.utils.parallelizer import ParallelExecutor

    # No straggler resubmission (timeout=0): a slow question would be asked twice; the LM has its own timeout.
    executor = ParallelExecutor(num_threads=threads, max_errors=1, disable_progress_bar=True, timeout=0)
    try:
        return executor.execute(run, questions)
    except Exception:
        if executor.exceptions_map:
            raise next(iter(executor.exceptions_map.values())) from None
        raise
    except BaseException:  # a stop signal: start no other question (the threads would answer them all before exit)
        executor.cancel_jobs.set()
        raise


def question_row(program, question: Question, judge=None) -> QuestionRow:
    """One question through `program.forward`, with its prediction and every per-question metric. A question
    the program fails on (the LM timed out, an error reply) is a failed row: counted, shown, and scored as failed,
    so one bad call does not lose the whole evaluation; a configuration error is raised."""
    example = question.to_example()
    started = time.perf_counter()
    try:
        with dspy.context(track_usage=True):
            pred = program(**example.inputs())
    except ConfigError:
        raise  # a rejected key or a missing reranker fails every question alike: the run ends (exit 2)
    except BookragError as exc:
        return QuestionRow.failed(question, str(exc), (time.perf_counter() - started) * 1000)
    latency_ms = (time.perf_counter() - started) * 1000
    answerable, refused = question.answerable, bool(pred.is_refusal)
    dense = [p.dense_score for p in pred.passages if p.dense_score is not None]
    row = QuestionRow.of(
        question, latency_ms=round(latency_ms, 2), refused=refused, refusal_reason=pred.refusal_reason, mode=pred.mode, answer=pred.answer,
        cited_numbers=metrics.cited_numbers(pred), cited_sources=metrics.cited_sources(pred), cited_text=metrics.cited_words(pred), gate_probability=pred.gate.get("probability"),
        gate_threshold=pred.gate.get("threshold"), top_dense=round(max(dense), 4) if dense else None,
        key_fact_recall=metrics.key_fact_recall(question.key_facts, pred.answer) if answerable else None,
        answer_correct=metrics.answer_correct(example, pred),
        refusal_correct=metrics.refusal_correct(example, pred),
        citation_validity=metrics.citation_validity(pred),
        citation_precision=metrics.citation_precision(example, pred),
        citation_recall=metrics.citation_recall(example, pred),
        cited_text_support=(metrics.cited_text_support(example, pred)
                            if answerable and not refused and question.key_facts else None),
        # Gold citation is asked of answered questions only; a refusal is scored by the refusal metrics.
        gold_cited=(metrics.gold_source_cited(example, pred)
                    if answerable and not refused and metrics.gold_citation_applies(example) else None),
        gold_retrieved=(metrics.recall_at_k(pred.passages, question.gold_sources, program.top_k) == 1.0
                        if retrieval_questions([question]) else None),
        token_f1=(metrics.token_f1(question.reference_answer, "" if refused else pred.answer)
                  if answerable and question.reference_answer else None),
        answer_words=metrics.answer_words(pred.answer) if answerable and not refused else None,
        parse_failed=pred.mode == ResponseMode.QUOTED or pred.refusal_reason == RefusalReason.UNREADABLE_REPLY,
        lm_answered=(pred.mode in (ResponseMode.GENERATED, ResponseMode.QUOTED)
                     or (program.generates and pred.refusal_reason in REFUSED_AFTER_LM)),
        combined=metrics.combined_score(example, pred),
        passed=metrics.passed(example, pred),
        **token_usage(pred),
    )
    if judge is not None and answerable:
        row.semantic_f1 = 0.0 if refused else metrics.semantic_f1(example, pred, judge)
    return row


def aggregate(rows: list[QuestionRow]) -> dict:
    """The report's figures over per-question rows, then the figures of each group of questions (per category, per
    style), in the order of the figures table (figures.py), which names every one."""
    by_category: dict[str, list[QuestionRow]] = defaultdict(list)
    by_style: dict[str, list[QuestionRow]] = defaultdict(list)
    styled = any(r.style for r in rows)  # questions without any style (no style column) have no per-style report
    for r in rows:
        by_category[r.category].append(r)
        if styled and (style := style_group(r.style, r.answerable)) is not None:  # answerable, no style: in none
            by_style[style].append(r)
    return {**figures_of(rows),
            "per_category": {category: group_figures(items) for category, items in sorted(by_category.items())},
            "per_style": {style: group_figures(items) for style, items in sorted(by_style.items())}}


def group_figures(items: list[QuestionRow]) -> dict:
    """The figures of a group of questions (a category, a style): the report's figures marked `group` in the
    figures table, over the group's questions."""
    figures = figures_of(items)
    return {name: figures[name] for name in GROUP}


def figures_of(rows: list[QuestionRow]) -> dict:
    """The figures of the figures table (figures.py) over `rows`, in its order (docs/how-it-works.md defines each)."""
    answerable = [r for r in rows if r.answerable]
    must_refuse = [r for r in rows if not r.answerable]
    answered = [r for r in answerable if r.answered]
    with_gold = [r for r in answered if r.gold_cited is not None]
    lm_answered = [r for r in rows if r.lm_answered]
    figures = {
        "n": len(rows),
        "n_answerable": len(answerable),
        "n_must_refuse": len(must_refuse),
        "errors": sum(r.error is not None for r in rows),
        "combined": mean(r.combined for r in rows),
        "pass_rate": share(r.passed for r in rows),
        "key_fact_accuracy": share(r.answer_correct for r in answerable),
        "key_facts_in_answers": share(r.key_fact_recall == 1.0 for r in answered),
        "refusal_recall": share(r.refused for r in must_refuse),
        "false_refusal_rate": share(r.refused for r in answerable),
        # An answerable question that neither passed nor was refused: a key fact missing, or the program failed.
        "wrong_or_partial": share(not r.passed and not r.refused for r in answerable),
        # Nothing answered means nothing was cited: no invalid citation.
        "citation_validity": mean((r.citation_validity for r in rows if r.answered), empty=1.0),
        # Sentence-level support: the words shown under the sources hold every key fact.
        "cited_text_support": share(r.cited_text_support for r in answered if r.cited_text_support is not None),
        "gold_citation_rate": share(r.gold_cited for r in with_gold),
        "citation_precision": mean(r.citation_precision for r in with_gold),
        "citation_recall": mean(r.citation_recall for r in with_gold),
        "recall_at_k": share(r.gold_retrieved for r in rows if r.gold_retrieved is not None),
        "latency_p50_ms": percentile([r.latency_ms for r in rows], 50),
        "latency_p95_ms": percentile([r.latency_ms for r in rows], 95),
        "tokens_per_question": mean(r.tokens for r in rows),
        # Answer quality against the reference: a refused answerable question scores F1 0 (it gave no answer).
        "token_f1": mean(r.token_f1 for r in answerable if r.token_f1 is not None),
        "answer_words_p50": percentile([r.answer_words for r in answered], 50),
        # The LM's answer calls: how many replies could not be parsed, their latency, and their tokens.
        "lm_calls": len(lm_answered),
        "parse_failure_rate": share(r.parse_failed for r in lm_answered),
        "answer_latency_p50_ms": percentile([r.latency_ms for r in lm_answered], 50),
        "answer_latency_p95_ms": percentile([r.latency_ms for r in lm_answered], 95),
        "prompt_tokens_per_answer": mean(r.prompt_tokens for r in lm_answered),
        "cached_tokens_per_answer": mean(r.cached_tokens for r in lm_answered),
        "completion_tokens_per_answer": mean(r.completion_tokens for r in lm_answered),
    }
    if any(r.semantic_f1 is not None for r in rows):
        figures["semantic_f1"] = mean(r.semantic_f1 or 0.0 for r in answerable)
    return {f.name: figures[f.name] for f in FIGURES if f.name in figures}


def share(flags) -> float:
    """Share of true values (0.0 for none)."""
    return mean(bool(flag) for flag in flags)


def mean(values, empty: float = 0.0) -> float:
    values = list(values)
    return sum(values) / len(values) if values else empty
