"""What the "did the book change?" check costs before every answer, on an unchanged book.

    python benchmarks/book_check.py [--books datasets/humanoid-primer ../shared/corpora/physical-ai-book-a]
                                    [--rounds 50] [--data-dir DIR]

Each book is indexed first (incrementally: a data folder that already holds it costs nothing; a fresh one embeds
the book with the local model, about a minute for 1,000 chunks). Then `BookIndex.ingest_state()` (the ingest record,
a stat of every file, a hash of any file whose stat moved) is timed `--rounds` times on an open index, as ask.py's
chat runs it before each turn; the first call, which also opens the store, is shown apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookrag.config import BUNDLED_BOOK, PROJECT_ROOT, Settings
from retrievers import BookIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", nargs="+", type=Path,
                        default=[BUNDLED_BOOK, PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a"])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--data-dir", type=Path, help="data folder to index into (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(data_dir=args.data_dir or Path(scratch))
        print(f"{'book':<28} {'files':>5} {'first ms':>9} {'median ms':>10} {'max ms':>8}")
        for book in args.books:
            with BookIndex(settings, book) as index:
                index.ingest(progress=False)
                started = time.perf_counter()
                state = index.ingest_state()
                first = (time.perf_counter() - started) * 1000
                times = []
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    index.ingest_state()
                    times.append((time.perf_counter() - started) * 1000)
                files = sum(1 for p in book.rglob("*") if p.is_file())
                print(f"{book.name:<28} {files:>5} {first:>9.1f} {statistics.median(times):>10.2f} "
                      f"{max(times):>8.2f}  ({state})")


if __name__ == "__main__":
    main()
