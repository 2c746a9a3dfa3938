"""Offline default quality on a book the team did not write: the refusal gate and the extractive answer.

    python benchmarks/offline_quality.py [--book ../shared/corpora/physical-ai-book-a]
                                         [--questions datasets/physical-ai-book-a.csv]

Calibrates the gate on the train split, then reports on dev+test, side by side: the uncalibrated prior, a single
cosine cut calibrated on train (the seed design), and the calibrated multi-feature gate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.book_rag import BookRAG
from programs.calibration import calibrate_gate, gate_examples
from programs.refusal_gate import RefusalGate
from programs.reports import program_report
from retrievers import BookIndex


def single_cut_gate(features, labels) -> RefusalGate:
    """The seed design: one cosine threshold, chosen on train like the full gate's cut."""
    gate = RefusalGate()
    gate.weights = {"top_dense": 1.0}
    gate.mean = {k: 0.0 for k in gate.mean}
    gate.scale = {k: 1.0 for k in gate.scale}
    gate.bias = 0.0
    probs = [gate.probability(f) for f in features]
    gate.threshold = RefusalGate._best_threshold(probs, labels, 0.15)
    gate.high_confidence = gate.threshold
    return gate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a")
    parser.add_argument("--questions", type=Path, default=PROJECT_ROOT / "datasets/physical-ai-book-a.csv")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir, book_dir=args.book)
    train = load_questions(args.questions, split="train")
    held_out = [q for q in load_questions(args.questions) if q.split in ("dev", "test")]
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        features, labels = gate_examples(program, train, progress=False)
        variants = {"prior (uncalibrated)": RefusalGate(), "single cosine cut": single_cut_gate(features, labels)}
        calibrate_gate(program, train, progress=False)
        variants["calibrated gate"] = program.gate
        print(f"{args.book.name}: calibrated on {len(train)} train questions, reported on {len(held_out)} dev+test")
        print(f"{'gate':24} refusal_recall false_refusal key_facts_in_answers answer_accuracy citation_validity "
              f"gold_citation p50_ms")
        for name, gate in variants.items():
            program.gate = gate
            r = program_report(program, held_out, progress=False)
            print(f"{name:24} {r['refusal_recall']:14.3f} {r['false_refusal_rate']:13.3f} "
                  f"{r['key_facts_in_answers']:20.3f} {r['answer_accuracy']:15.3f} {r['citation_validity']:17.3f} "
                  f"{r['gold_citation_rate']:13.3f} {r['latency_p50_ms']:6.1f}")
        print("calibrated gate weights:", {k: round(v, 2) for k, v in program.gate.weights.items()},
              "threshold", round(program.gate.threshold, 3))


if __name__ == "__main__":
    main()
