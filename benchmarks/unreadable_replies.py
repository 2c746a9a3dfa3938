"""What to show when the LM's reply is no answer: the passages' best sentences (the old extractive fallback), a refusal,
or one sentence of the book quoted as such. No LM call.

    python benchmarks/unreadable_replies.py --book fastapi --predictions reports/full-old-fastapi/predictions.csv

reads an evaluate.py run's predictions.csv, takes its questions whose reply was unreadable (mode
`extractive-fallback` in a run before 286b7d5, refusal reason `unreadable_reply` after it), searches each again as
the program does (`BookRAG.evidence`), puts each policy's answer through the answer checks, and prints, for each policy, how many of them would be right (every key
fact), refused, or wrong, and for must-refuse questions, how many would be answered. `--show` lists each question
with what each policy shows.
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
from programs.rag.book_quote import book_quote
from programs.rag.book_rag import BookRAG
from programs.rag.extractive_answer import ExtractiveAnswer
from programs.refusal.answer_checks import check_answer
from retrievers import BookIndex

UNREADABLE = ("extractive-fallback", "unreadable_reply")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", choices=sorted(LABELED), required=True)
    parser.add_argument("--predictions", type=Path, required=True, help="predictions.csv of an evaluate.py run")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--show", action="store_true", help="list each question and what each policy shows")
    args = parser.parse_args()
    book_dir, questions_path = LABELED[args.book]
    with args.predictions.open(encoding="utf-8", newline="") as f:
        unreadable = {row["id"] for row in csv.DictReader(f)
                      if row["mode"] in UNREADABLE or row["refusal_reason"] in UNREADABLE}
    outcomes = {policy: Counter() for policy in ("fallback", "quote", "refuse")}
    with BookIndex(Settings(data_dir=args.data_dir, book_dir=book_dir)) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever)
        for q in load_questions(questions_path):
            if q.id not in unreadable:
                continue
            query, passages = program.evidence(q.question, q.history)
            extract, quote = ExtractiveAnswer()(query, passages), book_quote(query, passages)
            shown = {"fallback": checked(q, extract.answer, extract.citations, passages),
                     "quote": checked(q, quote.text, [quote.number], passages) if quote else None, "refuse": None}
            for policy, answer in shown.items():
                outcomes[policy][outcome(q, answer)] += 1
            if args.show:
                print(f"{q.id} {q.question!r}")
                for policy, answer in shown.items():
                    print(f"    {policy:8s} {outcome(q, answer):8s} {(answer or '-')[:160]!r}")
    print(f"{args.book}: {len(unreadable)} unreadable replies")
    for policy, counts in outcomes.items():
        print(f"  {policy:8s} " + ", ".join(f"{name} {counts[name]}" for name in
                                             ("right", "wrong", "refused", "answered-must-refuse")))


def checked(question, answer: str, citations: list[int], passages) -> str | None:
    """The answer as the program would show it after the answer checks (None: refused)."""
    verdict = check_answer(question.question, answer, citations, passages, history=question.history,
                           answerable=bool(answer), generated=False)
    return answer if verdict.passed else None


def outcome(question, answer: str | None) -> str:
    if not question.answerable:
        return "refused" if answer is None else "answered-must-refuse"
    if answer is None:
        return "refused"
    return "right" if key_fact_recall(question.key_facts, answer) == 1.0 else "wrong"


if __name__ == "__main__":
    main()
