"""Where an evaluate.py run's wrong answers come from: a context without the facts, or a model that misread them.

    python benchmarks/reading_misses.py --book book-a --predictions reports/book-a-dev/predictions.csv [--show]

For each answerable question of the run (selected-text ones aside, as they read no retrieved context), the context
the local model read is built again (the question's passages, cut to the compact context's default budget) and
checked for every reference key fact. It prints how many contexts held every key fact, how many of those the run
answered right (every key fact stated, not refused), and how many it answered right without them. Reading errors are
the right answers missing where the context held every fact; `--show` lists them. The same figures follow per
style, for question files with a `style` column. No LM call.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import LABELED

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.metrics import key_fact_recall
from programs.rag.book_rag import BookRAG
from programs.rag.context import LOCAL_CONTEXT_WORDS
from retrievers import BookIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", choices=sorted(LABELED), required=True)
    parser.add_argument("--predictions", type=Path, required=True, help="predictions.csv of an evaluate.py run")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--show", action="store_true", help="list the answers misread from a complete context")
    args = parser.parse_args()
    book_dir, questions_path = LABELED[args.book]
    with args.predictions.open(encoding="utf-8", newline="") as f:
        rows = {row["id"]: row for row in csv.DictReader(f)}
    held = misread = right_without = answerable = 0
    by_style: dict[str, Counter] = {}
    with BookIndex(Settings(data_dir=args.data_dir, book_dir=book_dir)) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, context_words=LOCAL_CONTEXT_WORDS)  # the local model's context
        for q in load_questions(questions_path):
            row = rows.get(q.id)
            if row is None or not q.answerable or q.selected_text or not q.key_facts:
                continue
            answerable += 1
            query, passages = program.evidence(q.question, q.history)
            context = program.reader_inputs(q.question, query, passages, q.history).context
            complete = key_fact_recall(q.key_facts, context) == 1.0
            right = row["refused"] != "True" and key_fact_recall(q.key_facts, row["answer"]) == 1.0
            held += complete
            right_without += right and not complete
            style = by_style.setdefault(q.style or "(none)", Counter())
            style.update(n=1, held=complete, right_held=complete and right, right_without=right and not complete)
            if complete and not right:
                misread += 1
                if args.show:
                    print(f"  {q.id} {q.question}\n      {row['answer'][:200]}")
    print(f"{args.book}: {answerable} answerable questions; context held every key fact for {held} "
          f"({held / max(answerable, 1):.3f}); of those answered right {held - misread} "
          f"({(held - misread) / max(held, 1):.3f}); answered right without them {right_without} of {answerable - held}")
    if len(by_style) > 1:
        print(f"  {'style':12s} {'n':>4s} {'held':>5s} {'right|held':>11s} {'right|not':>10s}")
        for name, c in sorted(by_style.items()):
            print(f"  {name:12s} {c['n']:>4d} {c['held']:>5d} {c['right_held']:>11d} {c['right_without']:>10d}")


if __name__ == "__main__":
    main()
