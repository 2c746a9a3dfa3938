"""Two evaluate.py runs of the same questions, paired by question id and pooled over books, per style: the base
reader against the trained one (or any two programs).

    python benchmarks/reader_adapter.py --runs base adapted [--split dev] [--books humanoid-primer,book-a,fastapi]

reads `reports/<run>-<book>-<split>/report.json` (as written by
`python evaluate.py --zero-shot --split dev --book BOOK --questions SET --out reports/<run>-<book>-dev`, once with
BOOKRAG_LOCAL_ADAPTER=none and once with the adapter) and prints, per style: answerable questions right (every key
fact), refused and answered wrong, for each run, and the questions that changed (better / worse, with an exact sign
test); must-refuse questions refused; the LM's written tokens and the answered latency (p50); the passage numbers
the answers cite (as the reader saw them: best-first), and how many cite [1] alone. On 2 cores a whole
dev split takes hours per run; a seeded sample of each book's dev split (`benchmarks/dev_sample.py`) passed as SET
keeps a pair of runs under an hour.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookrag.questions import STYLES

# Questions a reader asks in their own words: not the book's phrasing, not a code identifier to look up.
READERS_WORDS = ("paraphrase", "definition", "how-to", "follow-up", "multi-part")


def outcome(row: dict) -> str:
    """right / refused / wrong for an answerable question; refused / answered for a must-refuse one."""
    if not row["answerable"]:
        return "refused" if row["refused"] else "answered"
    if row["refused"]:
        return "refused"
    return "right" if row["answer_correct"] else "wrong"


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact binomial p of `better` against `worse` changed pairs (McNemar's exact test)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(better, worse) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def load(run: str, book: str, split: str) -> dict[str, dict]:
    report = json.loads((ROOT / "reports" / f"{run}-{book}-{split}" / "report.json").read_text())
    (program,) = report["programs"].values()
    return {f"{book}:{row['id']}": row for row in program["rows"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs=2, metavar=("A", "B"), required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--books", default="humanoid-primer,book-a,fastapi")
    args = parser.parse_args(argv)
    a, b = ({}, {})
    for book in args.books.split(","):
        a.update(load(args.runs[0], book, args.split))
        b.update(load(args.runs[1], book, args.split))
    ids = sorted(set(a) & set(b))
    if missing := set(a) ^ set(b):
        print(f"note: {len(missing)} questions are in one run only and are left out", file=sys.stderr)
    groups = {style: [i for i in ids if a[i]["answerable"] and a[i]["style"] == style] for style in STYLES}
    groups["reader's words"] = [i for s in READERS_WORDS for i in groups[s]]
    groups["all answerable"] = [i for i in ids if a[i]["answerable"]]
    print(f"{args.runs[0]} -> {args.runs[1]}, {args.split}, pooled over {args.books}")
    print(f"{'style':16} {'n':>4}  {'right':>11}  {'refused':>11}  {'wrong':>11}  {'better':>6} {'worse':>5} {'p':>6}")
    for style, members in groups.items():
        if not members:
            continue
        counts = {run: {k: sum(outcome(rows[i]) == k for i in members) for k in ("right", "refused", "wrong")}
                  for run, rows in ((0, a), (1, b))}
        better = sum(outcome(a[i]) != "right" and outcome(b[i]) == "right" for i in members)
        worse = sum(outcome(a[i]) == "right" and outcome(b[i]) != "right" for i in members)
        cells = "  ".join(f"{counts[0][k]:>4} -> {counts[1][k]:<3}" for k in ("right", "refused", "wrong"))
        print(f"{style:16} {len(members):>4}  {cells}  {better:>6} {worse:>5} {sign_test(better, worse):>6.3f}")
    refuse = [i for i in ids if not a[i]["answerable"]]
    stopped = [sum(outcome(rows[i]) == "refused" for i in refuse) for rows in (a, b)]
    better = sum(outcome(a[i]) == "answered" and outcome(b[i]) == "refused" for i in refuse)
    worse = sum(outcome(a[i]) == "refused" and outcome(b[i]) == "answered" for i in refuse)
    print(f"{'must-refuse':16} {len(refuse):>4}  refused {stopped[0]} -> {stopped[1]}{'':19}{better:>6} {worse:>5} "
          f"{sign_test(better, worse):>6.3f}")
    for label, rows in ((args.runs[0], a), (args.runs[1], b)):
        written = [rows[i]["completion_tokens"] for i in ids if rows[i]["lm_answered"] and rows[i]["completion_tokens"]]
        answered = [rows[i]["latency_ms"] / 1000 for i in ids if not rows[i]["refused"] and rows[i]["lm_answered"]]
        print(f"{label}: written tokens p50 {_median(written)}, answered latency p50 {_median(answered, 's')} "
              f"(n {len(answered)}; cached answers count as ~0 s)")
        cited = [rows[i]["cited_numbers"] for i in ids
                 if not rows[i]["refused"] and rows[i]["lm_answered"] and "cited_numbers" in rows[i]]
        if cited:
            numbers = Counter(n for row in cited for n in row)
            print(f"{label}: of {len(cited)} answers, [1] alone {sum(row == [1] for row in cited)}, none "
                  f"{sum(not row for row in cited)}; passages cited {dict(sorted(numbers.items()))}")
    return 0


def _median(values: list[float], unit: str = "") -> str:
    return f"{statistics.median(values):.1f}{unit}" if values else "-"


if __name__ == "__main__":
    sys.exit(main())
