"""Generated answers with the local model, end to end: quality, latency, tokens and parse failures.

    python benchmarks/generation.py [--split dev] [--books bundled,A] [--program zero-shot|compiled|extractive]
                                    [--limit N] [--data-dir DIR]

For each book, runs the program `ask.py` would run over the split's questions (gate first: refused questions cost
no LM call) and prints, per book: token F1 against the reference answers, median words per answer, key facts in
answers, citation validity, refusal recall and false refusals, the share of LM replies that failed to parse,
p50/p95 latency of the questions the LM answered (warm: the model's load and the prompt's fixed prefix are timed
apart), prompt / cached / completion tokens per answer, and what refused each refused question (the gate, the
model's verdict, an unsupported claim, no valid citation). `compiled` uses
`artifacts/<book>/` (compile it first with optimize.py). Run it alone: two model-heavy jobs on 2 cores slow each
other several times over.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, PROJECT_ROOT, Settings, book_name
from bookrag.questions import load_questions
from programs.compile.artifact import load_program
from programs.evaluate.reports import program_report
from programs.lm.language_model import make_lm
from programs.rag.book_rag import BookRAG
from retrievers import BookIndex

BOOKS = {
    "bundled": (BUNDLED_BOOK, BUNDLED_QUESTIONS),
    "A": (PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a", PROJECT_ROOT / "datasets/physical-ai-book-a.csv"),
}
FIGURES = (  # (label, report key, format)
    ("n", "n", "{:d}"), ("LM calls", "lm_calls", "{:d}"), ("token F1", "token_f1", "{:.3f}"),
    ("words p50", "answer_words_p50", "{:.0f}"), ("key facts", "key_facts_in_answers", "{:.3f}"),
    ("cites valid", "citation_validity", "{:.3f}"), ("gold cited", "gold_citation_rate", "{:.3f}"),
    ("refusal recall", "refusal_recall", "{:.3f}"), ("false refusal", "false_refusal_rate", "{:.3f}"),
    ("parse fail", "parse_failure_rate", "{:.3f}"), ("errors", "errors", "{:d}"),
    ("p50 s", "answer_latency_p50_ms", "{:.1f}"), ("p95 s", "answer_latency_p95_ms", "{:.1f}"),
    ("prompt tok", "prompt_tokens_per_answer", "{:.0f}"), ("cached tok", "cached_tokens_per_answer", "{:.0f}"),
    ("compl. tok", "completion_tokens_per_answer", "{:.0f}"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--books", default="bundled,A")
    parser.add_argument("--program", choices=("zero-shot", "compiled", "extractive"), default="zero-shot")
    parser.add_argument("--limit", type=int, help="the first N questions of each book's split")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--cache-dir", type=Path, help="DSPy response cache (default: a fresh one, so every call runs)")
    parser.add_argument("--show", action="store_true", help="also print every question with its answer")
    args = parser.parse_args()
    cache_dir = args.cache_dir or Path(f"/tmp/bookrag-generation-{time.time_ns()}")
    settings = Settings(data_dir=args.data_dir, dspy_cache_dir=cache_dir,
                        answer_mode="extractive" if args.program == "extractive" else "generated")
    lm = make_lm(settings)
    print(f"program {args.program}, split {args.split}, LM {lm.model}")
    for name in args.books.split(","):
        book_dir, questions_path = BOOKS[name]
        questions = load_questions(questions_path, split=args.split)[: args.limit]
        with BookIndex(settings.replace(book_dir=book_dir)) as index:
            index.ingest(progress=False)
            program = build(args.program, index, settings, lm, book_dir)
            started = time.perf_counter()
            index.retriever.search("warm-up", k=1)  # loads the embedding model
            program.warm_up()  # loads the LM and reads the prompt's fixed prefix
            warm_up = time.perf_counter() - started
            report = program_report(program, questions, progress=None)
        load = getattr(lm.engine, "load_seconds", None)
        print(f"\n{name}: {len(questions)} {args.split} questions; warm-up call {warm_up:.1f} s"
              + (f" (model load {load:.1f} s)" if load is not None else ""))
        for label, key, fmt in FIGURES:
            value = report[key] / 1000 if key.endswith("_ms") else report[key]
            print(f"  {label:15} {fmt.format(value)}")
        for row in report["rows"] if args.show else ():
            print(f"  - {row['question']}\n    [{row['mode']}, F1 {row['token_f1'] or 0:.2f}, "
                  f"{row['latency_ms'] / 1000:.1f} s] {' '.join(row['answer'].split())}")
        for label, wanted in (("must refuse", False), ("answerable", True)):
            reasons = Counter(r["refusal_reason"] for r in report["rows"] if r["answerable"] is wanted and r["refused"])
            total = sum(r["answerable"] is wanted for r in report["rows"])
            print(f"  {label} refused by: " + (", ".join(f"{why} {n}/{total}" for why, n in reasons.items()) or "-"))
        for category, row in report["per_category"].items():
            extra = f" F1 {row['token_f1']:.2f}, {row['answer_words_p50']:.0f} words" if row["n_answerable"] else ""
            print(f"  {category:15} n={row['n']:3d} passed {row['pass_rate']:.2f}{extra}")


def build(kind: str, index, settings: Settings, lm, book_dir: Path):
    if kind == "compiled":
        return load_program(settings.artifacts_dir / book_name(book_dir), settings, index=index, lm=lm)
    return BookRAG.from_settings(settings, index, lm=lm)


if __name__ == "__main__":
    main()
