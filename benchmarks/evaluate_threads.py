"""What `evaluate.py --threads N` buys with a hosted LM: the same evaluation, one question at a time and N at once,
against the fake OpenAI-compatible server of the tests with a fixed delay per reply (a provider's latency).

    python benchmarks/evaluate_threads.py [--delay 0.5] [--threads 1,4,8] [--split dev]

Runs `evaluate.py --zero-shot` in process on the bundled book, in generated mode, after one untimed extractive run
that indexes the book and caches the questions' embeddings; each timed run gets a fresh DSPy cache, so every LM call
reaches the server. Prints the wall time of each run and its speed-up over one thread.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import FakeOpenAI, serving

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from programs.cli import evaluate

REPLY = ("[[ ## reasoning ## ]]\nPassage 1 states it.\n\n[[ ## answer ## ]]\nIt is described in the primer.\n\n"
         "[[ ## citations ## ]]\n[1]\n\n[[ ## answerable ## ]]\nTrue\n\n[[ ## completed ## ]]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the fake server takes per reply")
    parser.add_argument("--threads", default="1,4,8", help="comma-separated thread counts (default 1,4,8)")
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()
    with serving(FakeOpenAI(REPLY)) as fake, tempfile.TemporaryDirectory() as scratch:
        fake.delay = args.delay
        os.environ.update({"BOOKRAG_LM": "openai/fake-model", "BOOKRAG_LM_API_BASE": fake.api_base,
                           "BOOKRAG_ANSWER_MODE": "generated", "OPENAI_API_KEY": "sk-benchmark"})
        with contextlib.redirect_stdout(io.StringIO()):  # untimed: index the book, embed the questions
            evaluate.main(["--zero-shot", "--split", args.split, "--answer-mode", "extractive", "--json",
                           "--out", str(Path(scratch) / "warm-up")])
        seconds = {}
        for threads in map(int, args.threads.split(",")):
            os.environ["BOOKRAG_DSPY_CACHE_DIR"] = str(Path(scratch) / f"cache-{threads}")  # every call reaches it
            calls = len(fake.requests)
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                evaluate.main(["--zero-shot", "--split", args.split, "--threads", str(threads), "--json",
                               "--out", str(Path(scratch) / f"report-{threads}")])
            seconds[threads] = time.perf_counter() - started
            print(f"threads {threads:2d}: {seconds[threads]:6.1f} s, {len(fake.requests) - calls} LM calls, "
                  f"at most {fake.max_in_flight} at once, speed-up {seconds[min(seconds)] / seconds[threads]:.1f}x",
                  flush=True)
            fake.max_in_flight = 0


if __name__ == "__main__":
    main()
