"""Offline quality on a book the team did not write: the refusal gate and the extractive answer mode.

    python benchmarks/offline_quality.py [--book ../shared/corpora/physical-ai-book-a]
                                         [--questions datasets/physical-ai-book-a.csv] [--data-dir DIR]

Calibrates the gate on the train split, then reports on dev, test and dev+test, side by side: the zero-shot
default calibration (programs/refusal/default_calibration.json), a single cosine cut calibrated on train (the seed
design), and the calibrated multi-feature gate. Designs are chosen on dev; test is reported, never tuned on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.reports import aggregate, question_row
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import calibrate_gate, gate_examples
from programs.refusal.refusal_gate import RefusalGate
from retrievers import BookIndex

SPLITS = {"dev": ("dev",), "test": ("test",), "dev+test": ("dev", "test")}
COLUMNS = ("refusal_recall", "false_refusal_rate", "key_facts_in_answers", "key_fact_accuracy", "citation_validity",
           "gold_citation_rate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a")
    parser.add_argument("--questions", type=Path, default=PROJECT_ROOT / "datasets/physical-ai-book-a.csv")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir, book_dir=args.book)
    train = load_questions(args.questions, split="train")
    held_out = [q for q in load_questions(args.questions) if q.split in ("dev", "test")]
    split_of = {q.id: q.split for q in held_out}
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        features, labels = gate_examples(program, train, progress=False)
        variants = {"zero-shot default": RefusalGate(),
                    "single cosine cut": RefusalGate.fit_cosine_cut(features, labels)}
        calibrate_gate(program, train, progress=False)
        variants["calibrated gate"] = program.gate
        counts = ", ".join(f"{sum(s == name for s in split_of.values())} {name}" for name in ("dev", "test"))
        print(f"{args.book.name}: calibrated on {len(train)} train questions, reported on {counts}")
        print(f"{'gate':22} {'split':8} {' '.join(COLUMNS)} answer_words")
        for name, gate in variants.items():
            program.gate = gate
            rows = [question_row(program, q) for q in held_out]
            for split, members in SPLITS.items():
                chosen = [r for r in rows if split_of[r.id] in members]
                r = aggregate(chosen)
                words = [len(row.answer.split()) for row in chosen if row.answerable and not row.refused]
                print(f"{name:22} {split:8} " + " ".join(f"{r[c]:{len(c)}.3f}" for c in COLUMNS)
                      + f" {sum(words) / max(1, len(words)):12.1f}")
        print("calibrated gate weights:", {k: round(v, 2) for k, v in program.gate.weights.items()},
              "threshold", round(program.gate.threshold, 3))


if __name__ == "__main__":
    main()
