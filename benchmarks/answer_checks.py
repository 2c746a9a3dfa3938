"""What each check after the LM costs and catches, on the generated answers of the labeled books.

    python benchmarks/answer_checks.py [--splits dev] [--books bundled,book-a,fastapi] [--styles S,...] [--show]
    python benchmarks/answer_checks.py --books book-a --predictions reports/book-a-dev/predictions.csv

The program answers each question as `evaluate.py --zero-shot` does (the local model; DSPy's cache makes a rerun
cheap). The claim check (numbers, versions and names in a retrieved passage) is run on every answer that passed the
gate and the model's verdict; then each content check of `programs/refusal/answer_checks.py` on its own,
on every answer that also passed the claim check:

- cost: right answers (every key fact present) the check alone would refuse: false refusals it adds;
- catches: must-refuse questions the check alone refuses: answers it stops;
- wrong caught: answerable questions answered wrong (a key fact missing) that the check alone refuses: a refusal in
  place of a wrong answer.

A check earns its place when it catches more than it costs; the issue's bound is one point of false refusals each.
The refusal gate, in front of the LM, is counted the same way: answerable questions it refuses (cost: whether they
would have been answered right is not known, as the LM never ran) and must-refuse ones it refuses (catches).

`--styles paraphrase,definition` keeps the answerable questions of those styles (and every must-refuse one); the
figures are then also printed per style, pooled over the books.

`--predictions` reads the answers from an `evaluate.py` run instead of asking the LM (one book at a time): the
generated answers that run let through are checked. Give it a run of a program without the checks measured here
(an earlier commit), since an answer a check refused is not in the file.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import LABELED

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import STYLES, load_questions
from programs.evaluate.metrics import fact_present
from programs.lm.language_model import make_lm
from programs.rag.book_rag import BookRAG
from programs.refusal.answer_checks import CONTENT_CHECKS
from programs.refusal.claim_check import check_claims
from programs.refusal.reasons import RefusalReason
from retrievers import BookIndex


def generated_answers(predictions: Path) -> dict[str, str]:
    """{question id: answer} of the generated answers an evaluate.py run did not refuse."""
    with predictions.open(encoding="utf-8", newline="") as f:
        return {row["id"]: row["answer"] for row in csv.DictReader(f)
                if row["refused"] == "False" and row["mode"] == "generated"}


def generated_answer(program, q, query: str, passages) -> str | None:
    """The LM's answer to `q` when it reaches the claim check: past the gate and the model's verdict; else None."""
    if not program.gate(query, passages)[0]:
        return None
    answer, _, verdict, mode = program.write_answer(q.question, query, passages, q.history)
    return answer if mode == "generated" and verdict else None


def _claims_unsupported(question: str, answer: str, passages, history) -> bool:
    # what `grounded_citations` refuses: a claim that no retrieved passage holds, whatever the answer cites
    return not check_claims(answer, [p.text_with_heading for p in passages], question=question).supported


CHECKS = ((RefusalReason.UNSUPPORTED_CLAIM, _claims_unsupported), *CONTENT_CHECKS)
GATE = RefusalReason.GATE
MUST_REFUSE = "must-refuse"


def kept(q, splits: set[str], styles: set[str] | None) -> bool:
    if q.split not in splits or q.selected_text:
        return False
    return styles is None or not q.answerable or q.style in styles


def print_per_style(tally: dict[str, dict]) -> None:
    """Pooled over the books: per style, questions, right answers reaching the checks, then each check's cost,
    catches and wrong answers caught (must-refuse questions count as their own row)."""
    reasons = [GATE, *(reason for reason, _ in CHECKS)]
    print("\nper style, pooled (cost / catches / wrong caught):")
    print(f"  {'style':12s} {'n':>4s} {'right':>5s} " + " ".join(f"{str(r)[:20]:>20s}" for r in reasons))
    for style, row in tally.items():
        cells = " ".join(f"{len(row['cost'][r]):>6d} /{len(row['catches'][r]):>4d} /{len(row['wrong'][r]):>4d}  "
                         for r in reasons)
        print(f"  {style:12s} {row['n']:>4d} {row['right']:>5d} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="dev", help="comma-separated splits (default dev)")
    parser.add_argument("--books", default=",".join(LABELED), help=f"comma-separated, of {', '.join(LABELED)}")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--show", action="store_true", help="print each answer a check refuses")
    parser.add_argument("--predictions", type=Path, help="an evaluate.py predictions.csv to read the answers from")
    parser.add_argument("--styles", help=f"comma-separated, of {', '.join(STYLES)}: only answerable "
                                         "questions of these styles (and every must-refuse one), with a per-style table")
    args = parser.parse_args()
    splits = {s.strip() for s in args.splits.split(",") if s.strip()}
    styles = {s.strip() for s in args.styles.split(",") if s.strip()} if args.styles else None
    tally: dict[str, dict] = {}
    for name in args.books.split(","):
        book, questions_path = LABELED[name]
        rows = [q for q in load_questions(questions_path) if kept(q, splits, styles)]
        settings = Settings(data_dir=args.data_dir, book_dir=book)
        cost = {reason: [] for reason, _ in CHECKS}
        catches = {reason: [] for reason, _ in CHECKS}
        right = reached_refuse = 0
        answered = generated_answers(args.predictions) if args.predictions else {}
        with BookIndex(settings, book) as index:
            index.ingest(progress=False)
            program = BookRAG.from_settings(settings, index, lm=None if args.predictions else make_lm(settings))
            for q in rows:
                style = q.style if q.answerable else MUST_REFUSE
                row = tally.setdefault(style, {"n": 0, "right": 0, **{figure: {r: [] for r in (GATE, *cost)}
                                                                      for figure in ("cost", "catches", "wrong")}})
                row["n"] += 1
                query, passages = program.evidence(q.question, q.history)
                if not program.gate(query, passages)[0]:
                    row["cost" if q.answerable else "catches"][GATE].append(q.id)
                answer = answered.get(q.id) if args.predictions else generated_answer(program, q, query, passages)
                if answer is None:
                    continue
                correct = q.answerable and all(fact_present(f, answer) for f in q.key_facts)
                right += correct
                row["right"] += correct
                reached_refuse += not q.answerable
                for reason, fails in CHECKS:
                    if not fails(q.question, answer, passages, q.history):
                        continue
                    if correct or not q.answerable:
                        (cost if correct else catches)[reason].append(q.id)
                        row["cost" if correct else "catches"][reason].append(q.id)
                        if args.show:
                            print(f"  {reason} {'COST' if correct else 'catch'} {q.id}: {answer}")
                    else:
                        row["wrong"][reason].append(q.id)
                    if reason is RefusalReason.UNSUPPORTED_CLAIM:
                        break  # the content checks read only answers whose claims a retrieved passage holds
        n_answerable = sum(q.answerable for q in rows)
        print(f"{name} ({', '.join(sorted(splits))}): {n_answerable} answerable, {right} right answers reach the "
              f"claim check; {reached_refuse} must-refuse answers reach it")
        for reason, _ in CHECKS:
            print(f"  {reason:24s} cost {len(cost[reason])} ({len(cost[reason]) / max(1, n_answerable):.1%} of "
                  f"answerable) {' '.join(cost[reason])}; catches {len(catches[reason])} {' '.join(catches[reason])}")
    if styles is not None:
        print_per_style(tally)


if __name__ == "__main__":
    main()
