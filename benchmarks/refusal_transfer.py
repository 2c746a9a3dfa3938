"""Does the refusal gate transfer to a book it was not fitted on? Gate-only: retrieval features, no LM.

    python benchmarks/refusal_transfer.py [--splits dev] [--data-dir DIR]

For each labeled book (the bundled primer and book A), the gate's decision on every question that goes through
retrieval, scored per category (must-refuse as a whole, near-miss, out-of-scope, injection; answerable falsely
refused), for these gates:

- `hand-set prior`: the uncalibrated prior the zero-shot program used before the default calibration;
- `default`: the shipped default calibration (programs/refusal/default_calibration.json), fitted on the train
  splits of the labeled books (`make calibration`: programs/compile/default_gate.py);
- `fit on <book> train`: the logistic gate fitted on one book's train split, scored on the other book
  (leave-one-book-out: the gate has never seen that book) and on its own;
- `compiled for <book>`: the gate optimize.py keeps for the book (`choose_gate`: cosine cut, logistic or default,
  chosen on its dev split), scored on its own book.

Book B's held-out set (datasets/physical-ai-book-b-heldout.csv, all test) is a third book no gate was fitted on;
it is scored with `--splits test`. Decide on `--splits dev` (the default); report test at the end.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.compile.default_gate import CORPORA, GateExample, book_gate_examples
from programs.compile.default_gate import LABELED_BOOKS as LABELED
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import choose_gate
from programs.refusal.refusal_gate import RefusalGate
from retrievers import BookIndex

HELD_OUT = {"book-b": (CORPORA / "physical-ai-book-b", PROJECT_ROOT / "datasets" / "physical-ai-book-b-heldout.csv")}
# The zero-shot gate before the default calibration: a cosine cut softened by term coverage, set by hand.
HAND_SET_PRIOR = {"weights": {"top_dense": 12.0, "coverage_top3": 4.0, "override": -6.0},
                  "mean": {"top_dense": 0.0, "coverage_top3": 0.0, "override": 0.0},
                  "scale": {"top_dense": 1.0, "coverage_top3": 1.0, "override": 1.0},
                  "bias": -12.0 * 0.30 - 4.0 * 0.5, "threshold": 0.5, "high_confidence": 0.8, "calibrated": False}
REFUSE_CATEGORIES = ("near-miss", "out-of-scope", "injection")


def compiled_gate(data_dir: Path, book: Path, questions: Path) -> tuple[str, RefusalGate]:
    """The gate optimize.py compiles for the book (`choose_gate` on its train/dev splits), and which it chose."""
    labeled = load_questions(questions)
    with BookIndex(Settings(data_dir=data_dir, book_dir=book)) as index:
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        chosen = choose_gate(program, [q for q in labeled if q.split == "train"],
                             [q for q in labeled if q.split == "dev"], progress=False)
    return chosen["chosen"], program.gate


def fitted(examples: list[GateExample]) -> RefusalGate:
    return RefusalGate().fit([e.features for e in examples], [e.question.answerable for e in examples])


def category_figures(gate: RefusalGate, examples: list[GateExample]) -> dict[str, tuple[int, int]]:
    """{group: (refused, n)} for must-refuse, each refusal category, and answerable (refused = falsely)."""
    groups: dict[str, list[bool]] = {}
    for e in examples:
        refused = gate.probability(e.features) < gate.threshold
        q = e.question
        for group in ("answerable",) if q.answerable else ("must-refuse", q.category or "uncategorized"):
            groups.setdefault(group, []).append(refused)
    return {group: (sum(values), len(values)) for group, values in groups.items()}


def row(gate_name: str, scored_on: str, split: str, figures: dict[str, tuple[int, int]]) -> str:
    def cell(group: str) -> str:
        refused, n = figures.get(group, (0, 0))
        return f"{refused / n:.3f} ({refused}/{n})" if n else "–"

    return (f"| {gate_name} | {scored_on} | {split} | {cell('must-refuse')} | "
            + " | ".join(cell(c) for c in REFUSE_CATEGORIES) + f" | {cell('answerable')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="dev", help="comma-separated splits to report: dev, test (default dev)")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    books = {name: book_gate_examples(args.data_dir, *paths) for name, paths in LABELED.items()}
    train = {name: [e for e in examples if e.question.split == "train"] for name, examples in books.items()}
    gates = {"hand-set prior": RefusalGate().load_state(HAND_SET_PRIOR), "default": RefusalGate()}
    gates |= {f"fit on {name} train": fitted(rows) for name, rows in train.items()}
    compiled = {name: compiled_gate(args.data_dir, *paths) for name, paths in LABELED.items()}
    print("Share refused by the gate alone (refused/n); answerable: falsely refused.")
    print("| gate | scored on | split | must-refuse | " + " | ".join(REFUSE_CATEGORIES) + " | answerable |")
    print("|---|---|---|---|" + "---|" * len(REFUSE_CATEGORIES) + "---|")
    for gate_name, gate in gates.items():
        for name, examples in books.items():
            own = gate_name == f"fit on {name} train"
            scored_on = f"{name} (own book)" if own else name
            for split in splits:
                print(row(gate_name, scored_on, split, category_figures(gate, [e for e in examples
                                                                             if e.question.split == split])))
    for name, (chosen, gate) in compiled.items():
        for split in splits:
            print(row(f"compiled for {name} (chose {chosen})", f"{name} (own book)", split,
                      category_figures(gate, [e for e in books[name] if e.question.split == split])))
    if "test" in splits:  # the held-out book is all test: never looked at while deciding
        for name, paths in HELD_OUT.items():
            examples = book_gate_examples(args.data_dir, *paths)
            for gate_name, gate in gates.items():
                print(row(gate_name, f"{name} (held out)", "all", category_figures(gate, examples)))


if __name__ == "__main__":
    main()
