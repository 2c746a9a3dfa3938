"""Answer latency of the default program, end to end through `ask()`, as `python ask.py "..."` runs it.

    python benchmarks/latency.py [--n 30] [--data-dir DIR] [--expand none|parts] [--zero-shot]

Uses a fresh data folder by default (so no question's embedding is already cached on disk): the bundled book is
indexed there first by `ingest.py` in a separate process, which leaves this process cold. Then: opening the
program, the cold first `ask()` (loads the embedding model), two warm-up questions, and `--n` timed questions of
the bundled book's labeled set (about 60% answerable, 40% must-refuse; follow-ups and selected-text questions
left out), each asked once. Also times one whole `python ask.py "..." --json` process. The program is the
compiled artifact for the bundled book if there is one (as in ask.py), or with --zero-shot the zero-shot one.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.cli import load_settings
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS
from bookrag.questions import load_questions
from programs.evaluate.reports import percentile


def pick_questions(n: int) -> tuple[list, list, list]:
    """Warm-up, timed, and one more for the ask.py process: all different, so no embedding is cached."""
    pool = [q for q in load_questions(BUNDLED_QUESTIONS) if not q.history and not q.selected_text]
    random.Random(0).shuffle(pool)
    n_refuse = round(0.4 * n)
    answerable = [q for q in pool if q.answerable]
    refuse = [q for q in pool if not q.answerable]
    timed = answerable[: n - n_refuse] + refuse[:n_refuse]
    warmup = answerable[n - n_refuse: n - n_refuse + 2]
    return warmup, timed, answerable[n - n_refuse + 2]


def line(name: str, values: list[float]) -> str:
    return (f"{name:28} n={len(values):3d}  p50 {percentile(values, 50):8.1f} ms  "
            f"p95 {percentile(values, 95):8.1f} ms  max {max(values):8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=30, help="timed questions (at least 20)")
    parser.add_argument("--data-dir", type=Path, help="data folder (default: a fresh temporary one)")
    parser.add_argument("--expand", choices=("none", "parts"), default=None, help="query expansion to time")
    parser.add_argument("--zero-shot", action="store_true", help="ignore a compiled artifact")
    args = parser.parse_args()
    if args.n < 20:
        parser.error("--n must be at least 20")
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bookrag-latency-"))
    env = {**os.environ, "BOOKRAG_DATA_DIR": str(data_dir), "BOOKRAG_BOOK": str(BUNDLED_BOOK)}
    if args.zero_shot:  # for the ask.py run: no artifacts folder, so no artifact
        env["BOOKRAG_ARTIFACTS_DIR"] = str(data_dir / "no-artifacts")
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "ingest.py")], env=env, check=True, capture_output=True)
    print(f"index ready in {data_dir} ({time.perf_counter() - started:.1f} s, separate process); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    from programs.compile.artifact import open_program

    warmup, timed, cli_question = pick_questions(args.n)
    settings = load_settings(data_dir=data_dir, book_dir=BUNDLED_BOOK, expand=args.expand)
    started = time.perf_counter()
    program = open_program(settings, book_dir=BUNDLED_BOOK, zero_shot=args.zero_shot, announce=lambda message: None)
    program.set_expansion(settings.expand)
    opened = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    first = program.ask(timed[0].question)
    cold = (time.perf_counter() - started) * 1000
    artifact = "compiled artifact" if program.manifest else "zero-shot"
    print(f"program: BOOKRAG_LM={settings.lm}, {artifact}, expand={settings.expand}, answer mode "
          f"{'generated' if program.generates else 'extractive'}")
    print(f"cold: open_program {opened:.1f} ms; first ask() {cold:.1f} ms (loads the embedding model; "
          f"{first.mode})")

    for q in warmup:
        program.ask(q.question)
    rows = []
    for q in timed:
        started = time.perf_counter()
        response = program.ask(q.question)
        rows.append((q, response, (time.perf_counter() - started) * 1000))
    print(f"warm, {len(rows)} questions asked once each ({sum(q.answerable for q, _, _ in rows)} answerable, "
          f"{sum(not q.answerable for q, _, _ in rows)} must-refuse); load average {os.getloadavg()[0]:.1f}")
    print(line("ask() end to end", [ms for _, _, ms in rows]))
    print(line("  answered", [ms for _, r, ms in rows if not r.is_refusal]))
    print(line("  refused", [ms for _, r, ms in rows if r.is_refusal]))
    print(line("  retrieval (inside ask)", [r.retrieval_time_ms for _, r, _ in rows]))
    print(line("  generation (inside ask)", [r.generation_time_ms for _, r, _ in rows if not r.is_refusal]))
    program.index.close()  # the embedded store admits one opener: the CLI run below needs it

    started = time.perf_counter()
    result = subprocess.run([sys.executable, str(ROOT / "ask.py"), cli_question.question, "--json"], env=env,
                            capture_output=True, check=False)
    print(f"one `python ask.py QUESTION --json` process (imports, model load, one answer; exit "
          f"{result.returncode}): {time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
