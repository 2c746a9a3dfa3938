"""How often the answer metric agrees with a person reading the answer.

    python benchmarks/metric_agreement.py [--sample benchmarks/metric_agreement.csv] [--show]

The sample holds generated answers to answerable dev questions of the labeled books, each with a reader's verdict
(`correct`: the answer states everything the question asks, as the book says it; `wrong`: it misses or misstates
a part). The metric's verdict is `answer_correct`'s: every key fact of the question (its current labels) in the
answer. Agreement is the share of answers where the two verdicts are the same; the disagreements are printed with
`--show`, so a key fact that misjudges answers can be fixed and the check repeated.

It also prints how well each graded score of `combined_score` ranks the reader's right answers above the wrong ones
(AUC: the chance that a right answer scores above a wrong one, ties half): key-fact recall, and token F1 against
the reference answer, which `combined_score` weighs as much.
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
from programs.evaluate.metrics import fact_text, key_fact_recall, token_f1

VERDICTS = {"correct": True, "wrong": False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=Path, default=PROJECT_ROOT / "benchmarks" / "metric_agreement.csv")
    parser.add_argument("--show", action="store_true", help="print every answer the two verdicts disagree on")
    args = parser.parse_args()
    questions = {name: {q.id: q for q in load_questions(path)} for name, (_, path) in LABELED.items()}
    agree: dict[str, list[bool]] = {}
    graded: list[tuple[bool, float, float]] = []  # (reader's verdict, key-fact recall, token F1)
    with args.sample.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            q = questions[row["book"]][row["id"]]
            recall = key_fact_recall(q.key_facts, row["answer"])
            metric = recall == 1.0  # `answer_correct`'s verdict
            reader = VERDICTS[row["verdict"]]
            agree.setdefault(row["book"], []).append(metric == reader)
            graded.append((reader, recall, token_f1(q.reference_answer, row["answer"])))
            if args.show and metric != reader:
                facts = "; ".join(fact_text(fact) for fact in q.key_facts)
                print(f"{row['book']} {q.id}: reader {row['verdict']}, metric {'correct' if metric else 'wrong'}\n"
                      f"  Q: {q.question}\n  A: {row['answer']}\n  key facts: {facts}\n  note: {row['note']}")
    every = [a for rows in agree.values() for a in rows]
    for book, rows in agree.items():
        print(f"{book:10s} {sum(rows)}/{len(rows)} agree ({sum(rows) / len(rows):.1%})")
    print(f"{'all':10s} {sum(every)}/{len(every)} agree ({sum(every) / len(every):.1%})")
    for name, column in (("key-fact recall", 1), ("token F1", 2)):
        print(f"AUC of {name} against the reader's verdict: {auc([(g[0], g[column]) for g in graded]):.3f}")


def auc(scored: list[tuple[bool, float]]) -> float:
    """The chance that an answer the reader judged right scores above one judged wrong (ties count half)."""
    right = [score for verdict, score in scored if verdict]
    wrong = [score for verdict, score in scored if not verdict]
    pairs = [(r > w) + 0.5 * (r == w) for r in right for w in wrong]
    return sum(pairs) / len(pairs)


if __name__ == "__main__":
    main()
