"""`--optimizer labeled` measured on a question file: the program compiled with N labeled demos from a book's train
split (`compile_predictors`, as optimize.py compiles the candidate), then every question of the file asked, and its
outcome counted as `benchmarks/reader_adapter.py` counts it (right: every key fact; refused; wrong).

    python benchmarks/labeled_demos.py --book datasets/humanoid-primer --train datasets/humanoid-primer.csv \
        --questions reports/dev-sample5/humanoid-primer.csv --demos 2

Run it on two commits to compare what the demos show (one data folder: the zero-shot replies are cached).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.cli import load_settings
from bookrag.questions import load_questions
from programs.compile.artifact import open_program
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.evaluate.metrics import fact_present


def outcome(question, response) -> str:
    if not question.answerable:
        return "refused" if response.is_refusal else "answered"
    if response.is_refusal:
        return "refused"
    return "right" if all(fact_present(f, response.answer) for f in question.key_facts) else "wrong"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, required=True)
    parser.add_argument("--train", type=Path, required=True, help="the labeled set whose train split gives demos")
    parser.add_argument("--questions", type=Path, required=True, help="the questions to ask (every row)")
    parser.add_argument("--demos", type=int, default=2)
    args = parser.parse_args()
    settings = load_settings(book_dir=args.book)
    program = open_program(settings, book_dir=args.book, zero_shot=True, announce=lambda line: None)
    train = load_questions(args.train, "train")
    compiled = compile_predictors(program, OptimizerSettings("labeled", max_demos=args.demos), train, [],
                                  say=lambda line: None)
    questions = load_questions(args.questions)
    started, counts = time.perf_counter(), Counter()
    for q in questions:
        response = compiled.ask(q.question, history=list(q.history), selected_text=q.selected_text or None)
        counts[(q.answerable, outcome(q, response))] += 1
    answerable = sum(n for (answerable, _), n in counts.items() if answerable)
    print(f"{args.questions} with {args.demos} labeled demos ({len(compiled.generate.predict.demos)} set), "
          f"{time.perf_counter() - started:.0f} s")
    print(f"answerable {answerable}: right {counts[True, 'right']}, refused {counts[True, 'refused']}, "
          f"wrong {counts[True, 'wrong']}; must-refuse refused {counts[False, 'refused']} of "
          f"{counts[False, 'refused'] + counts[False, 'answered']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
