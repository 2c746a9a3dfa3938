"""What the claim-in-passage check (programs/refusal/claim_check.py) would cost and catch, with no LM.

    python benchmarks/claim_check.py [--splits dev] [--data-dir DIR]

On each labeled book (the bundled primer and book A), for the questions of the chosen splits:

- reference answers: the hand-written answer of each answerable question, checked against the retrieved passages
  from its gold sources (what a correct generated answer would cite), and against all retrieved passages. A
  failure here is a false refusal the check would add to a model that answers like the reference;
- extractive answers: the offline program's answers (default gate), checked against the passages they cite: the
  book's own sentences, so every failure is a defect of the check;
- asked value: of the questions the gate lets through, those that ask for a price, number, date or version
  (programs/refusal/asked_value.py) but whose extractive answer holds no value of that kind, per category.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import LABELED

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.rag.book_rag import BookRAG
from programs.refusal.asked_value import asked_value
from programs.refusal.claim_check import check_claims
from retrievers import BookIndex


def share(hits: list[bool]) -> str:
    return f"{sum(hits) / len(hits):.3f} ({sum(hits)}/{len(hits)})" if hits else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="dev", help="comma-separated splits (default dev)")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--show", action="store_true", help="print each failing claim")
    args = parser.parse_args()
    splits = {s.strip() for s in args.splits.split(",") if s.strip()}
    for name, (book, questions_path) in LABELED.items():
        rows = [q for q in load_questions(questions_path) if q.split in splits and not q.selected_text]
        reference, retrieved, extractive = [], [], []
        missing_value: dict[str, list[bool]] = defaultdict(list)
        with BookIndex(Settings(data_dir=args.data_dir, book_dir=book)) as index:
            index.ingest(progress=False)
            program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
            for q in rows:
                pred = program(question=q.question, history=q.history)
                if q.answerable and q.reference_answer:
                    gold = [p.text_with_heading for p in pred.passages if p.source in q.gold_sources]
                    if gold:
                        check = check_claims(q.reference_answer, gold)
                        reference.append(check.supported)
                        retrieved.append(check_claims(q.reference_answer, [p.text_with_heading for p in pred.passages]).supported)
                        if args.show and not check.supported:
                            print(f"  reference {q.id}: {check.unsupported}")
                if pred.is_refusal:
                    continue
                check = check_claims(pred.answer, [pred.passages[n - 1].text_with_heading for n in pred.citations])
                extractive.append(check.supported)
                if args.show and not check.supported:
                    print(f"  extractive {q.id}: {check.unsupported}")
                asked = asked_value(pred.query)
                if asked:
                    group = "answerable" if q.answerable else q.category or "must-refuse"
                    missing_value[group].append(not asked.held_by(pred.answer))
        print(f"{name} ({', '.join(sorted(splits))}): reference answers supported by the gold passages "
              f"{share(reference)}, by all retrieved passages {share(retrieved)}; extractive answers supported "
              f"{share(extractive)}")
        for group, hits in sorted(missing_value.items()):
            print(f"  passed the gate, asks a value, extract holds none: {group} {share(hits)}")


if __name__ == "__main__":
    main()
