"""What each refusal policy costs on dev, gate only: no LM (the gate decides before any LM call).

    python benchmarks/refusal_policy.py [--data-dir DIR]

For each policy below, the default gate is fitted under it as `make calibration` fits it (programs/compile/
default_gate.py: every labeled book's train split, MiniLM retrieval), then scored on every labeled book's dev split:
the share of must-refuse questions it refuses (refusal recall) and of answerable ones it refuses (false refusals),
per book and pooled. A refusal here is the gate's whole decision: a probability under its cut, or a best cosine under
the policy's `min_top_cosine`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT
from programs.compile.default_gate import LABELED_BOOKS, GateExample, book_gate_examples, fit_default_gate
from programs.refusal.refusal_gate import RefusalGate
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy

POLICIES = {
    "max_false_refusal 0.02": RefusalPolicy(max_false_refusal=0.02),
    "max_false_refusal 0.05 (default)": DEFAULT_POLICY,
    "max_false_refusal 0.10": RefusalPolicy(max_false_refusal=0.10),
    "max_false_refusal 0.05, min_top_cosine 0.30": RefusalPolicy(min_top_cosine=0.30),
}


def refused(gate: RefusalGate, examples: list[GateExample], answerable: bool) -> tuple[int, int]:
    """(refused, n) among the examples of one kind."""
    kind = [e for e in examples if e.question.answerable == answerable]
    return sum(not gate.admits(gate.probability(e.features), e.features) for e in kind), len(kind)


def cell(counts: tuple[int, int]) -> str:
    done, n = counts
    return f"{done / n:.3f} ({done}/{n})" if n else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    books = {name: book_gate_examples(args.data_dir, *paths) for name, paths in LABELED_BOOKS.items()}
    every = [e for examples in books.values() for e in examples]
    dev = {name: [e for e in examples if e.question.split == "dev"] for name, examples in books.items()}
    dev["pooled"] = [e for examples in dev.values() for e in examples]
    print("| policy | cut | dev of | must-refuse refused | answerable refused |")
    print("|---|---|---|---|---|")
    for name, policy in POLICIES.items():
        gate = fit_default_gate(every, policy)
        for book, examples in dev.items():
            print(f"| {name} | {gate.threshold:.3f} | {book} | {cell(refused(gate, examples, False))} | "
                  f"{cell(refused(gate, examples, True))} |")


if __name__ == "__main__":
    main()
