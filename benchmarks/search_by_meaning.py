"""Does searching by meaning alone, when the hybrid passages miss most of a question's words, bring the key facts?

    python benchmarks/search_by_meaning.py [--splits train,dev] [--data-dir DIR]

For every answerable question of the labeled books (selected-text ones aside), the program's passages are taken
twice: with the hybrid search alone, and as `BookRAG.search` takes them (hybrid, or dense when the hybrid passages
hold under `MIN_WORDS_FOUND` of the question's content words). Per style, it prints how many questions have every
key fact in the passages and in the compact context the local model reads, and the questions each way gained or
lost. Then, per style with the must-refuse questions as their own row, how many questions are searched by meaning and
how many of those the refusal gate refuses. No LM call. Decide on train and dev; test is for the report.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refusal_transfer import LABELED

from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.metrics import key_fact_recall
from programs.rag.book_rag import BookRAG, misses_the_words
from programs.rag.context import LOCAL_CONTEXT_WORDS, format_context
from retrievers import BookIndex

WAYS = ("hybrid", "by meaning when the words miss")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="train,dev", help="comma-separated splits (default train,dev)")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    args = parser.parse_args()
    splits = {s.strip() for s in args.splits.split(",") if s.strip()}
    counts: Counter = Counter()
    changed: dict[str, list[str]] = {way: [] for way in WAYS}
    gated: Counter = Counter()  # (style, "n" | "by meaning" | "by meaning, gate refuses")
    for name, (book, questions) in LABELED.items():
        with BookIndex(Settings(data_dir=args.data_dir, book_dir=book)) as index:
            index.ingest(progress=False)
            program = BookRAG(index.retriever, context_words=LOCAL_CONTEXT_WORDS)
            for q in load_questions(questions):
                if q.split not in splits or q.selected_text:
                    continue
                style = q.style if q.answerable else "must-refuse"
                query, passages = program.evidence(q.question, q.history)
                hybrid = program.retriever.search(query, k=program.top_k, mode="hybrid")
                by_meaning = misses_the_words(query, hybrid)
                gated[style, "n"] += 1
                gated[style, "by meaning"] += by_meaning
                gated[style, "by meaning, gate refuses"] += by_meaning and not program.gate(query, passages)[0]
                if not (q.answerable and q.key_facts):
                    continue
                held = {}
                for way, found in zip(WAYS, (hybrid, passages)):
                    held[way] = (key_fact_recall(q.key_facts, format_context(found)) == 1.0,
                                 key_fact_recall(q.key_facts, program.reader_inputs(q.question, query, found).context) == 1.0)
                    counts[q.style, way, "passages"] += held[way][0]
                    counts[q.style, way, "context"] += held[way][1]
                counts[q.style, "n"] += 1
                before, after = held[WAYS[0]][0], held[WAYS[1]][0]
                if before != after:
                    changed[WAYS[1] if after else WAYS[0]].append(f"{name} {q.id} ({q.style})")
    print(f"Every key fact held, {', '.join(sorted(splits))} (passages / compact context):")
    print(f"| style | n | {WAYS[0]} | {WAYS[1]} |\n|---|---|---|---|")
    styles = sorted({key[0] for key in counts})
    for style in [*styles, "all"]:
        group = styles if style == "all" else [style]

        def total(*key, group=group):
            return sum(counts[(s, *key)] for s in group)

        print(f"| {style} | {total('n')} | " + " | ".join(f"{total(w, 'passages')} / {total(w, 'context')}"
                                                       for w in WAYS) + " |")
    for way, ids in changed.items():
        print(f"only {way}: {len(ids)} {', '.join(ids)}")
    print("\nSearched by meaning, and refused by the gate (every question of the splits):")
    print("| style | n | searched by meaning | of those, the gate refuses |\n|---|---|---|---|")
    for style in sorted({key[0] for key in gated}):
        print(f"| {style} | {gated[style, 'n']} | {gated[style, 'by meaning']} | "
              f"{gated[style, 'by meaning, gate refuses']} |")


if __name__ == "__main__":
    main()
