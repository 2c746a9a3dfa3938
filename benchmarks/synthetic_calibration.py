"""A gate calibrated on a synthetic question set vs on hand labels, both scored on book A's labeled questions.

    python benchmarks/synthetic_calibration.py [--book book-a|book-b] [--splits dev] [--write-csv PATH]
                                               [--data-dir DIR]

The synthetic set is built the way `python optimize.py --book DIR` builds it for a book with no questions
(programs/compile/synthetic_questions.py), except that its answerable questions come from `ClozeQuestion`, the
writer that needs no LM (the local LM is not used here). Both routes choose their gate as optimize.py does
(`choose_gate`: cosine cut, logistic, default); the default candidate is the calibration fitted on the bundled book
only, so that neither route sees book A's hand labels except the hand-labeled route's own train/dev. Each route's
logistic gate (fitted on its train split) is shown too. Scored, gate only, per category on book A's labeled
`--splits` (decide on dev; report test at the end). `--book book-b`: the synthetic route alone (book B has no
labels to compile with; the shipped default has never seen it), scored on its held-out set.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import (
    HAND_SET_PRIOR,
    HELD_OUT,
    LABELED,
    REFUSE_CATEGORIES,
    category_figures,
    fitted,
    row,
)

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.compile.default_gate import book_gate_examples
from programs.compile.question_writer import ClozeQuestion
from programs.compile.synthetic_questions import synthetic_questions, write_questions_csv
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import choose_gate, gate_examples
from programs.refusal.refusal_gate import RefusalGate
from retrievers import BookIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", choices=("book-a", "book-b"), default="book-a")
    parser.add_argument("--splits", default="dev", help="comma-separated splits to score (default dev; book B: all)")
    parser.add_argument("--write-csv", type=Path, help="also write the synthetic set here, to read it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    labeled_book = args.book in LABELED
    book, questions_path = LABELED[args.book] if labeled_book else HELD_OUT[args.book]
    if labeled_book:  # a default that has not seen this book's labels
        default_name = "default (bundled only)"
        default = fitted([e for e in book_gate_examples(args.data_dir, *LABELED["bundled"]) if e.question.split == "train"])
    else:
        default_name, default = "default", RefusalGate()
    with BookIndex(Settings(data_dir=args.data_dir, book_dir=book)) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        synthetic = synthetic_questions(index, ClozeQuestion(), seed=args.seed, progress=False)
        routes = {}
        sets = {"synthetic": synthetic} | ({"hand-labeled": load_questions(questions_path)} if labeled_book else {})
        for name, questions in sets.items():
            train = [q for q in questions if q.split == "train"]
            chosen = choose_gate(program, train, [q for q in questions if q.split == "dev"], progress=False,
                                 default=default)
            routes[f"{name} (chose {chosen['chosen']})"] = RefusalGate().load_state(chosen["state"])
            routes[f"{name}, logistic"] = RefusalGate().fit(*gate_examples(program, train))
            print(f"{name}: gate candidates on its own dev split: {chosen['candidates']}")
    if args.write_csv:
        print(f"wrote {write_questions_csv(synthetic, args.write_csv)}")
    counts = {c: sum(q.category == c for q in synthetic) for c in ("factual", *REFUSE_CATEGORIES)}
    print(f"synthetic set for {book.name}: {len(synthetic)} questions, {counts}")
    examples = book_gate_examples(args.data_dir, book, questions_path)
    gates = {"hand-set prior": RefusalGate().load_state(HAND_SET_PRIOR), default_name: default, **routes}
    print("| gate | scored on | split | must-refuse | " + " | ".join(REFUSE_CATEGORIES) + " | answerable |")
    print("|---|---|---|---|" + "---|" * len(REFUSE_CATEGORIES) + "---|")
    for name, gate in gates.items():
        for split in splits if labeled_book else ("all",):
            scored = [e for e in examples if split == "all" or e.question.split == split]
            print(row(name, args.book, split, category_figures(gate, scored)))

if __name__ == "__main__":
    main()
