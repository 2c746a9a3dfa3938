"""Retrieval benchmark: ingest speed, query latency, and recall@k/MRR for dense, sparse and hybrid in one run.

    python benchmarks/retrieval.py [--book ../shared/corpora/physical-ai-book-a]
                                   [--questions datasets/physical-ai-book-a.csv] [--top-k 5] [--chunk-sizes 250]

Each chunk size gets a fresh data folder, so "cold ingest" includes loading the model and embedding everything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import DEFAULT_TOP_K, PROJECT_ROOT, SEARCH_MODES, Settings
from bookrag.questions import load_questions
from programs.evaluate.reports import percentile, retrieval_questions, retrieval_report
from retrievers import BookIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a")
    parser.add_argument("--questions", type=Path, default=PROJECT_ROOT / "datasets/physical-ai-book-a.csv")
    parser.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    parser.add_argument("--chunk-sizes", default="250", help="comma-separated chunk sizes in tokens to compare")
    parser.add_argument("--overlap", type=int, default=40)
    args = parser.parse_args()
    questions = load_questions(args.questions)
    queries = [q.search_text for q in retrieval_questions(questions)]
    print(f"book {args.book} — {len(queries)} answerable questions with gold sources, k={args.top_k}")
    for size in [int(s) for s in args.chunk_sizes.split(",")]:
        with tempfile.TemporaryDirectory() as data_dir:
            settings = Settings(data_dir=Path(data_dir), book_dir=args.book, chunk_tokens=size,
                                chunk_overlap=min(args.overlap, size // 3))
            with BookIndex(settings) as index:
                cold = index.ingest(progress=False)
                warm = index.ingest(progress=False)
                retriever = index.retriever
                latencies = []
                for query in queries * 2:  # second pass: embedding cache warm, as for repeated questions
                    started = time.perf_counter()
                    retriever.search(query, k=args.top_k, mode="hybrid")
                    latencies.append((time.perf_counter() - started) * 1000)
                first_pass = latencies[: len(queries)]
                print(f"\nchunk size {size} (overlap {settings.chunk_overlap}): {cold.chunks} chunks")
                print(f"  cold ingest {cold.seconds:.1f} s, re-ingest (unchanged) {warm.seconds:.2f} s "
                      f"(embedded {warm.embedded})")
                print(f"  hybrid query, new question: p50 {percentile(first_pass, 50):.1f} ms, "
                      f"p95 {percentile(first_pass, 95):.1f} ms; repeated: p50 "
                      f"{percentile(latencies[len(queries):], 50):.1f} ms, "
                      f"p95 {percentile(latencies[len(queries):], 95):.1f} ms")
                print(f"  {'mode':8} recall@{args.top_k}   MRR")
                for mode in SEARCH_MODES:
                    report = retrieval_report(retriever, questions, k=args.top_k, mode=mode, progress=False)
                    print(f"  {mode:8} {report['recall_at_k']:.3f}     {report['mrr']:.3f}")


if __name__ == "__main__":
    main()
