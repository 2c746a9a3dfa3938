"""The local Gemma 3 270M writing the answer (`answer_mode="generated"`) vs the extractive default, on book A.

    python benchmarks/answer_modes.py [--n 24] [--lm-threads 1] [--max-tokens 256]

Both programs share one retriever and one refusal gate, calibrated on book A's train split; the first `--n` dev
questions (a seeded shuffle, so answerable and must-refuse questions mix) go through both. Reported per mode:
must-refuse refused, answerable falsely refused, key facts present in answered questions, citations valid, gold
source cited, LM failures (no parsable reply: `AgentError`, exit 3 in ask.py), and p50/p95 latency. DSPy's cache
is off, so every Gemma call is timed; each takes seconds on 2 cores, hence the --n cap.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.config import PROJECT_ROOT, Settings
from bookrag.errors import AgentError
from bookrag.questions import load_questions
from programs.evaluate.reports import aggregate, percentile, question_row
from programs.lm.language_model import make_lm
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import calibrate_gate
from retrievers import BookIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book", type=Path, default=PROJECT_ROOT.parent / "shared/corpora/physical-ai-book-a")
    parser.add_argument("--questions", type=Path, default=PROJECT_ROOT / "datasets/physical-ai-book-a.csv")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_ROOT / "data")
    parser.add_argument("--n", type=int, default=24, help="dev questions to run through both modes")
    parser.add_argument("--lm-threads", type=int, default=1, help="llama.cpp threads (1 on a shared machine)")
    parser.add_argument("--max-tokens", type=int, default=256, help="token cap per Gemma call (the default's)")
    args = parser.parse_args()
    import dspy  # after bookrag.cli

    settings = Settings(data_dir=args.data_dir, book_dir=args.book, lm="local", lm_threads=args.lm_threads,
                        lm_max_tokens=args.max_tokens)
    dev = load_questions(args.questions, split="dev")
    random.Random(0).shuffle(dev)
    dev = dev[: args.n]
    lm = make_lm(settings)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # time the model, not a cache
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        extractive = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        calibrate_gate(extractive, load_questions(args.questions, split="train"), progress=False)
        generated = BookRAG(index.retriever, lm=lm, answer_mode="generated")
        generated.gate = extractive.gate
        print(f"{args.book.name}: {len(dev)} dev questions ({sum(q.answerable for q in dev)} answerable), gate "
              f"calibrated on train; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for name, program in (("extractive (default)", extractive), ("generated (Gemma 270M)", generated)):
            started = time.perf_counter()
            rows, failed, failure_ms = run(program, dev)
            report(name, rows, failed, failure_ms, time.perf_counter() - started)


def run(program: BookRAG, questions) -> tuple[list[dict], list, list[float]]:
    """Rows for the questions the program answered or refused; the questions it failed on, and their times."""
    rows, failed, failure_ms = [], [], []
    for q in questions:
        started = time.perf_counter()
        try:
            rows.append(question_row(program, q))
        except AgentError:  # Gemma's reply did not parse, even after DSPy's JSON fallback
            failed.append(q)
            failure_ms.append((time.perf_counter() - started) * 1000)
    return rows, failed, failure_ms


def report(name: str, rows: list[dict], failed: list, failure_ms: list[float], seconds: float) -> None:
    r = aggregate(rows)
    answered = [row for row in rows if row["answerable"] and not row["refused"]]
    latencies = [row["latency_ms"] for row in rows] + failure_ms
    print(f"{name}: {len(rows) + len(failed)} questions in {seconds:.0f} s; load average {os.getloadavg()[0]:.1f}")
    print(f"  LM failures (AgentError)        {len(failed)}  ({sum(q.answerable for q in failed)} answerable, "
          f"{sum(not q.answerable for q in failed)} must-refuse; not in the rates below)")
    print(f"  must-refuse refused             {r['refusal_recall']:.3f}  (of {r['n_must_refuse']})")
    print(f"  answerable falsely refused      {r['false_refusal_rate']:.3f}  (of {r['n_answerable']})")
    print(f"  key facts in answered           {r['key_facts_in_answers']:.3f}  (of {len(answered)} answered)")
    print(f"  citations valid                 {r['citation_validity']:.3f}")
    print(f"  gold source cited               {r['gold_citation_rate']:.3f}")
    print(f"  latency p50 / p95               {percentile(latencies, 50):.0f} / {percentile(latencies, 95):.0f} ms")
    for row in answered[:3]:
        print(f"    e.g. {row['question'][:70]!r} -> {' '.join(str(row['answer']).split())[:110]!r}")


if __name__ == "__main__":
    main()
