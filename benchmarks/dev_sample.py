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
from bookrag.questions import STYLES


def sample(rows: list[dict], split: str, per_style: int, seed: int) -> list[dict]:
    """`per_style` rows of each style and of must-refuse questions in `split`, in file order."""
    rng = random.Random(f"{seed}:{split}:{per_style}")
    chosen: set[int] = set()
    for style in (*STYLES, "must-refuse"):
        members = [i for i, row in enumerate(rows) if row.get("split") == split and _style(row) == style]
        chosen.update(rng.sample(members, min(per_style, len(members))))
    return [row for i, row in enumerate(rows) if i in chosen]


def _style(row: dict) -> str:
    return row.get("style") or "" if row.get("answerable", "").strip().lower() == "true" else "must-refuse"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path, help="a CSV question file with split and style columns")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--per-style", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with args.questions.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    chosen = sample(rows, args.split, args.per_style, args.seed)

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
