"""A seeded sample of a question file's split, the same number of questions from each style (and of must-refuse
questions), for paired comparisons that cannot afford every question on a 2-core machine.

    python benchmarks/dev_sample.py datasets/fastapi-tutorial.csv --per-style 3 --out reports/dev-sample/fastapi.csv

writes the sampled rows unchanged (same columns, same ids), so `evaluate.py --questions` reads the sample as it
reads the whole file and `reader_adapter.py` pairs its runs by id. The sample depends only on the file, the split,
--per-style and --seed.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.atomic_file import atomic_write
from bookrag.questions import STYLES, Question, load_questions


def sample(questions: list[Question], per_style: int, seed: int, split: str) -> set[str]:
    """The ids of `per_style` questions of each style and of must-refuse questions, drawn from `questions`."""
    rng = random.Random(f"{seed}:{split}:{per_style}")
    chosen: set[str] = set()
    for style in (*STYLES, "must-refuse"):
        members = [q.id for q in questions if (q.style if q.answerable else "must-refuse") == style]
        chosen.update(rng.sample(members, min(per_style, len(members))))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path, help="a CSV question file with a style column")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--per-style", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    ids = sample(load_questions(args.questions, args.split), args.per_style, args.seed, args.split)
    with args.questions.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, chosen = reader.fieldnames, [row for row in reader if row["id"] in ids]

    def write(temp: Path) -> None:
        with temp.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(chosen)

    atomic_write(args.out, write)
    print(f"{len(chosen)} of {args.questions} ({args.split}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
