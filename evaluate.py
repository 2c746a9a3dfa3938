"""Accuracy reports for bookrag.

    python evaluate.py --retrieval-only --book BOOK_DIR --questions FILE [--k 5] [--mode hybrid] [--json]

Exit codes: 0 ok, 2 configuration error, 3 store/embedding error, 4 bad arguments or question file.
"""

from __future__ import annotations

import json
from pathlib import Path

from bookrag.cli import ArgumentParser, load_settings, run, setup_logging
from bookrag.config import BUNDLED_QUESTIONS


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Evaluate bookrag on a labeled question set.")
    parser.add_argument("--retrieval-only", action="store_true", help="evaluate the retriever alone")
    parser.add_argument("--book", type=Path, help="book folder (default: BOOKRAG_BOOK, the bundled book)")
    parser.add_argument("--questions", type=Path, default=BUNDLED_QUESTIONS, help="CSV or JSONL question file")
    parser.add_argument("--split", default="all", help="train, dev, test or all (default all)")
    parser.add_argument("--k", type=int, default=5, help="passages retrieved per question (default 5)")
    parser.add_argument("--mode", choices=("dense", "sparse", "hybrid"), default="hybrid")
    parser.add_argument("--mmr", action="store_true", help="diversify passages with MMR")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout and nothing else")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    if not args.retrieval_only:
        parser.error("only --retrieval-only is available so far")
    if args.k < 1:
        parser.error("--k must be at least 1")

    from bookrag.questions import load_questions
    from programs.reports import retrieval_report
    from retrievers import BookIndex

    settings = load_settings(book_dir=args.book)
    questions = load_questions(args.questions, split=args.split)
    with BookIndex(settings) as index:
        index.ingest(progress=not args.json and None)  # incremental: a no-op when the book is unchanged
        report = retrieval_report(index.retriever, questions, k=args.k, mode=args.mode, mmr=args.mmr,
                                  progress=not args.json and None)
    report["collection"] = index.collection
    if args.json:
        print(json.dumps(report))
    else:
        print_retrieval(report)
    return 0


def print_retrieval(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Retrieval on {report['collection']} — {report['mode']}, k={report['k']}, n={report['n']}")
    table.add_column("category")
    table.add_column("n", justify="right")
    table.add_column(f"recall@{report['k']}", justify="right")
    for category, row in report["per_category"].items():
        table.add_row(category, str(row["n"]), f"{row['recall_at_k']:.2f}")
    table.add_row("all", str(report["n"]), f"{report['recall_at_k']:.2f}", style="bold")
    console = Console()
    console.print(table)
    console.print(f"MRR {report['mrr']:.3f}   query p50 {report['latency_p50_ms']:.1f} ms, "
                  f"p95 {report['latency_p95_ms']:.1f} ms")


if __name__ == "__main__":
    run(main)
