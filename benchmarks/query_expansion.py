"""Query expansion, measured on retrieval: none vs parts (vs HyDE with the local LM on a small subset).

    python benchmarks/query_expansion.py [--top-k 5] [--hyde N] [--lm-threads 1]
    python benchmarks/query_expansion.py --hyde 20 --hyde-style paraphrase --hyde-only   # dev paraphrases only

For each book (book A, the bundled primer and FastAPI, with their labeled question sets) and each answerable question
that goes through retrieval: recall@k (a gold source among the top k), MRR, and gold coverage@k (the share of the
question's gold sources among the top k: a multi-part question often needs two chapters). Reported over all
questions, the `multi-part` category, and the questions the parts rule splits. `parts` is shown with the
program's round-robin merge and, for comparison, with reciprocal-rank fusion. Then end to end: the offline
extractive mode (gate calibrated on the train split without expansion) on the dev+test questions,
none vs parts: refusals and key facts. `--hyde N` runs HyDE with the local model on the first N
multi-part questions (about 20 s each on 2 cores): its parse rate and recall; `--hyde-style STYLE` takes the dev
questions of that style instead, and `--hyde-only` skips everything else.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, DEFAULT_TOP_K, PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.metrics import recall_at_k, reciprocal_rank
from programs.evaluate.reports import program_report, retrieval_questions
from programs.rag.book_rag import BookRAG
from programs.rag.query_expansion import split_question
from programs.refusal.calibration import calibrate_gate
from retrievers import BookIndex
from retrievers.store import RRF_K

BOOKS = {
    "book A": (PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a", PROJECT_ROOT / "datasets/physical-ai-book-a.csv"),
    "humanoid-primer": (BUNDLED_BOOK, BUNDLED_QUESTIONS),
    "FastAPI": (PROJECT_ROOT.parent / "shared/corpora/fastapi-tutorial", PROJECT_ROOT / "datasets/fastapi-tutorial.csv"),
}


def rrf(rankings, k: int, constant: int = RRF_K):
    """Reciprocal-rank fusion, the alternative to the program's round-robin `interleave`."""
    scores, passages = {}, {}
    for ranking in rankings:
        for rank, p in enumerate(ranking, start=1):
            scores[p.id] = scores.get(p.id, 0.0) + 1.0 / (constant + rank)
            passages.setdefault(p.id, p)
    return [passages[i] for i in sorted(scores, key=scores.get, reverse=True)][:k]


def coverage(passages, gold_sources) -> float:
    found = {p.source for p in passages}
    return sum(s in found for s in gold_sources) / len(gold_sources)


def score(rows: list[tuple]) -> str:
    n = len(rows)
    if not n:
        return "n=0"
    recall = sum(recall_at_k(p, q.gold_sources, K) for q, p, _ in rows) / n
    mrr = sum(reciprocal_rank(p, q.gold_sources) for q, p, _ in rows) / n
    cover = sum(coverage(p, q.gold_sources) for q, p, _ in rows) / n
    searches = sum(s for _, _, s in rows) / n
    return f"n={n:3d} recall@{K} {recall:.3f}  MRR {mrr:.3f}  coverage@{K} {cover:.3f}  searches/question {searches:.2f}"


def run(program: BookRAG, questions, fuse=None) -> list[tuple]:
    """(question, passages, searches) per question. Searches, not milliseconds: the embedding cache on disk
    makes a repeated query nearly free, so timings would depend on which variant ran first."""
    rows = []
    for q in questions:
        queries = program.expander(question=q.search_text) if program.expander else [q.search_text]
        if fuse is None:
            passages = program.retrieve(q.search_text, k=K)
        else:
            passages = fuse([program.retriever.search(x, k=K, mode=program.search_mode) for x in queries], K)
        rows.append((q, passages, len(queries)))
    return rows


def report(name: str, rows: list[tuple]) -> None:
    groups = {
        "all": rows,
        "multi-part": [r for r in rows if r[0].category == "multi-part"],
        "split by rule": [r for r in rows if split_question(r[0].search_text)],
    }
    for group, subset in groups.items():
        print(f"  {name:22} {group:14} {score(subset)}")


def main() -> None:
    global K
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--hyde", type=int, default=0, help="HyDE with the local LM on N multi-part questions")
    parser.add_argument("--lm-threads", type=int, default=1, help="llama.cpp threads for --hyde")
    parser.add_argument("--hyde-style", help="run HyDE on the dev questions of this style instead of multi-part ones")
    parser.add_argument("--hyde-only", action="store_true", help="only the HyDE subset")
    args = parser.parse_args()
    K = args.top_k
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for book, (book_dir, questions_file) in BOOKS.items():
        labeled = load_questions(questions_file)
        questions = retrieval_questions(labeled)
        with BookIndex(Settings(data_dir=args.data_dir, book_dir=book_dir)) as index:
            index.ingest(progress=False)  # a no-op when the book is indexed and unchanged
            none = BookRAG(index.retriever, lm=None, top_k=K)
            parts = BookRAG(index.retriever, lm=None, top_k=K, expand="parts")
            run(none, questions[:3])  # load the embedding model outside the timings
            if args.hyde_only:
                print(f"{book}:")
                hyde_subset(index, questions, args)
                continue
            print(f"{book}: {len(questions)} answerable questions with gold sources, k={K}")
            report("none", run(none, questions))
            report("parts (round-robin)", run(parts, questions))
            report("parts (RRF)", run(parts, questions, fuse=rrf))
            end_to_end(none, parts, labeled)
            if args.hyde:
                hyde_subset(index, questions, args)


def end_to_end(none: BookRAG, parts: BookRAG, labeled) -> None:
    calibrate_gate(none, [q for q in labeled if q.split == "train"], progress=False)
    parts.gate = none.gate
    held_out = [q for q in labeled if q.split in ("dev", "test")]
    print(f"  end to end, extractive, gate calibrated on train, {len(held_out)} dev+test questions:")
    for name, program in (("none", none), ("parts", parts)):
        r = program_report(program, held_out, progress=False)
        multi = r["per_category"].get("multi-part", {})
        print(f"  {name:22} must-refuse refused {r['refusal_recall']:.3f}  falsely refused "
              f"{r['false_refusal_rate']:.3f}  key facts {r['key_facts_in_answers']:.3f}  citations valid "
              f"{r['citation_validity']:.3f}  gold cited {r['gold_citation_rate']:.3f}  multi-part passed "
              f"{multi.get('pass_rate', 0):.3f} (n={multi.get('n', 0)})")


class Counter(logging.Handler):
    """Counts HyDE's fallbacks (its warning when the LM's reply held no passage)."""

    n = 0

    def emit(self, record):
        self.n += 1


def hyde_subset(index, questions, args) -> None:
    import dspy

    from programs.lm.language_model import make_lm

    if args.hyde_style:
        subset = [q for q in questions if q.style == args.hyde_style and q.split == "dev"][: args.hyde]
    else:
        subset = [q for q in questions if q.category == "multi-part"][: args.hyde]
    lm = make_lm(Settings(data_dir=args.data_dir, lm="local", lm_threads=args.lm_threads, lm_max_tokens=160))
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # time the model, not a cache
    hyde = BookRAG(index.retriever, lm=lm, top_k=K, expand="hyde")
    unparsed = Counter()
    logging.getLogger("programs.rag.hyde").addHandler(unparsed)
    rows, seconds = [], []
    for q in subset:
        started, fallbacks = time.perf_counter(), unparsed.n
        passages = hyde.retrieve(q.search_text, k=K)
        seconds.append(time.perf_counter() - started)
        rows.append((q, passages, 1 if unparsed.n > fallbacks else 2))
    print(f"  HyDE (local model) on {len(subset)} {args.hyde_style or 'multi-part'} questions: "
          f"{len(subset) - unparsed.n} gave a "
          f"hypothetical passage, {unparsed.n} fell back to the question; {len(lm.history)} LM calls, "
          f"median {median(seconds):.1f} s per question (load {os.getloadavg()[0]:.1f})")
    report("none (same subset)", run(BookRAG(index.retriever, lm=None, top_k=K), subset))
    report("hyde (local)", rows)


K = DEFAULT_TOP_K

if __name__ == "__main__":
    main()
