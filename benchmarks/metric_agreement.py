"""How often the answer metric agrees with a person reading the answer.

    python benchmarks/metric_agreement.py [--sample benchmarks/metric_agreement.csv] [--show]

The sample holds generated answers to answerable dev questions of the labeled books, each with a reader's verdict
(`correct`: the answer states everything the question asks, as the book says it; `wrong`: it misses or misstates
a part). The metric's verdict is `answer_correct`'s: every key fact of the question (its current labels) in the
answer. Agreement is the share of answers where the two verdicts are the same; the disagreements are printed with
`--show`, so a key fact that misjudges answers can be fixed and the check repeated.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import LABELED

from bookrag.config import PROJECT_ROOT
from bookrag.questions import load_questions
from programs.evaluate.metrics import fact_present, fact_text

VERDICTS = {"correct": True, "wrong": False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=Path, default=PROJECT_ROOT / "benchmarks" / "metric_agreement.csv")
    parser.add_argument("--show", action="store_true", help="print every answer the two verdicts disagree on")
    args = parser.parse_args()
    questions = {name: {q.id: q for q in load_questions(path)} for name, (_, path) in LABELED.items()}
    agree: dict[str, list[bool]] = {}
    with args.sample.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            q = questions[row["book"]][row["id"]]
            metric = all(fact_present(fact, row["answer"]) for fact in q.key_facts)
            reader = VERDICTS[row["verdict"]]
            agree.setdefault(row["book"], []).append(metric == reader)
            if args.show and metric != reader:
                facts = "; ".join(fact_text(fact) for fact in q.key_facts)
                print(f"{row['book']} {q.id}: reader {row['verdict']}, metric {'correct' if metric else 'wrong'}\n"
                      f"  Q: {q.question}\n  A: {row['answer']}\n  key facts: {facts}\n  note: {row['note']}")
    every = [a for rows in agree.values() for a in rows]
    for book, rows in agree.items():
        print(f"{book:10s} {sum(rows)}/{len(rows)} agree ({sum(rows) / len(rows):.1%})")
    print(f"{'all':10s} {sum(every)}/{len(every)} agree ({sum(every) / len(every):.1%})")


if __name__ == "__main__":
    main()
