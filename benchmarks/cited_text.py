"""What the cited-text step (programs/rag/cited_text.py) adds to an answer's time, with no LM.

    python benchmarks/cited_text.py [--split dev] [--repeat 5] [--data-dir DIR]

The bundled book's questions of the split are answered in the extractive mode (the book's own sentences: the
longest answers, with the most citations, so the most sentences to match); the step is then timed alone on each
answered question (`repeat` runs, the median kept): milliseconds per answer (p50, p95, max) and per citation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import BUNDLED_BOOK, PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.reports import percentile
from programs.rag.book_rag import BookRAG
from programs.rag.cited_text import cited_texts
from retrievers import BookIndex

QUESTIONS = PROJECT_ROOT / "datasets" / "humanoid-primer.csv"


def step_ms(pred, repeat: int) -> float:
    """The median time of the cited-text step on one answer, in milliseconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        cited_texts(pred.answer, pred.query, pred.passages, pred.citations)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the step per answer (the median is kept)")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    questions = [q for q in load_questions(QUESTIONS) if q.split == args.split and not q.selected_text]
    with BookIndex(Settings(data_dir=args.data_dir, book_dir=BUNDLED_BOOK)) as index:
        program = BookRAG(index.retriever, answer_mode="extractive")
        answered = [pred for pred in (program(**q.to_example().inputs()) for q in questions) if not pred.is_refusal]
        per_answer = [step_ms(pred, args.repeat) for pred in answered]
    citations = sum(len(pred.citations) for pred in answered)
    print(f"{len(answered)} answered of {len(questions)} {args.split} questions, {citations} citations")
    print(f"cited-text step per answer: p50 {percentile(per_answer, 50):.2f} ms, p95 {percentile(per_answer, 95):.2f} "
          f"ms, max {max(per_answer, default=0.0):.2f} ms; per citation {sum(per_answer) / max(citations, 1):.2f} ms")


if __name__ == "__main__":
    main()
