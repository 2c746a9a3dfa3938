"""The report's figures, in one table: what each is called, how it is shown and where it shows.

`figures_of` (reports.py) computes them and orders the report by this table, over every question and, for the
figures marked `group`, over each group of questions (per category, per style); evaluate.py's --json summary and
terminal tables, the compile's candidate table and manifest scores (programs/compile/compiler.py, optimize.py), the
plots (plots.py) and predictions.csv (report_files.py) all read their figures from here. Adding a figure is a row
here and its computation in `figures_of`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    name: str  # the report key
    label: str | None = None  # the row of evaluate.py's terminal table; None: not shown there
    format: str = "{:.3f}"  # how the terminal table writes it
    lm_only: bool = False  # a figure of the LM's answers: "–" for a program that made no LM call, not a 0
    summary: bool = True  # in evaluate.py --json
    headline: bool = False  # a bar of the comparison plot
    score: bool = False  # in the compile's manifest scores and every candidate's dev figures
    column: str | None = None  # the compile's candidate table column title; None: not a column
    group: bool = False  # also a figure of each group of questions (per_category, per_style), over its questions


# In the terminal table's order (the combined score first); figures shown nowhere but --json after them.
FIGURES = (
    Figure("n", column="n", group=True),
    Figure("n_answerable", group=True),
    Figure("n_must_refuse"),
    Figure("combined", "combined score", headline=True, score=True, column="combined", group=True),
    Figure("pass_rate", "passed (every key fact, or refused)", group=True),
    Figure("key_fact_accuracy", "answered with every key fact (answerable)", headline=True, score=True,
           column="key-fact\nacc.", group=True),
    Figure("refusal_recall", "refusal recall (must refuse)", headline=True, score=True, column="refusal\nrecall"),
    Figure("false_refusal_rate", "false refusal rate", headline=True, score=True, column="false\nrefusals",
           group=True),
    Figure("wrong_or_partial", "answered wrong or partial, or failed (answerable)", group=True),
    Figure("citation_validity", "citation validity", headline=True, score=True),
    Figure("cited_text_support", "cited text holding every key fact (answered)", group=True),
    Figure("gold_citation_rate", "gold citation rate", headline=True),
    Figure("recall_at_k", "retrieval recall@k", headline=True),
    Figure("token_f1", "token F1 vs reference (answerable)", score=True, column="token\nF1", group=True),
    Figure("answer_words_p50", "words per answer (median)", "{:.0f}", score=True, group=True),
    Figure("semantic_f1", "semantic F1"),  # only with an LM judge (--semantic-f1)
    Figure("lm_calls", "LM answer calls", "{:.0f}"),
    Figure("parse_failure_rate", "replies that failed to parse", lm_only=True, score=True),
    Figure("errors", "errors (questions that failed)", "{:.0f}"),
    Figure("latency_p50_ms", "latency p50 / ms", "{:.1f}"),
    Figure("latency_p95_ms", "latency p95 / ms", "{:.1f}"),
    Figure("answer_latency_p50_ms", "LM-answered latency p50 / ms", "{:.1f}", lm_only=True),
    Figure("answer_latency_p95_ms", "LM-answered latency p95 / ms", "{:.1f}", lm_only=True),
    Figure("prompt_tokens_per_answer", "prompt tokens per LM answer", "{:.0f}", lm_only=True),
    Figure("cached_tokens_per_answer", "  of them from the prompt cache", "{:.0f}", lm_only=True),
    Figure("completion_tokens_per_answer", "completion tokens per LM answer", "{:.0f}", lm_only=True),
    Figure("key_facts_in_answers"),
    Figure("citation_precision"),
    Figure("citation_recall"),
    Figure("tokens_per_question"),
)
# The report's blocks of figures per group of questions ({group: figures}), in --json beside the figures.
BREAKDOWNS = ("per_category", "per_style")

SUMMARY = tuple(f.name for f in FIGURES if f.summary) + BREAKDOWNS
TERMINAL = tuple(f for f in FIGURES if f.label is not None)
GROUP = tuple(f.name for f in FIGURES if f.group)
HEADLINE = tuple(f.name for f in FIGURES if f.headline)
SCORES = tuple(f.name for f in FIGURES if f.score)
CANDIDATE_FIGURES = tuple(f.name for f in FIGURES if f.score or f.column)
CANDIDATE_COLUMNS = tuple(f for f in FIGURES if f.column is not None)

# The per-question figures that predictions.csv carries (QuestionRow fields; `result`: pass, fail or error).
QUESTION_FIGURES = ("key_fact_recall", "token_f1", "answer_words", "citation_validity", "citation_precision",
                    "citation_recall", "cited_text_support", "combined", "result", "latency_ms", "prompt_tokens", "cached_tokens",
                    "completion_tokens")
