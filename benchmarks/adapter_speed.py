"""What a LoRA adapter costs llama.cpp per token: the packaged model with and without it, the same prompts, the same
number of written tokens.

    python benchmarks/adapter_speed.py [--adapter adapters/reader/adapter.gguf] [--reps 8] [--write 64]

llama.cpp cannot use its repacked (interleaved) kernels for a matrix that carries an adapter, so an adapter costs
time in proportion to the matrices it adapts. Each rep reads one prompt (a chat turn holding about 700 words of
the bundled book, as the program's context is) and writes exactly --write tokens (greedy, past any end of turn),
once with each model, alternating which goes first. Prints the median prompt and writing speed of each and their
ratio. Run it alone: two model-heavy jobs on 2 cores slow each other several times over.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookrag.cli import load_settings
from bookrag.config import BUNDLED_BOOK, SHIPPED_ADAPTER
from programs.lm.llama_cpp_engine import LlamaCppEngine

CONTEXT_WORDS = 700


def prompts(n: int) -> list[str]:
    words = " ".join(p.read_text(encoding="utf-8") for p in sorted(BUNDLED_BOOK.rglob("*.md"))).split()
    step = max(1, (len(words) - CONTEXT_WORDS) // n)
    return [" ".join(words[i * step:i * step + CONTEXT_WORDS]) for i in range(n)]


def timed(llama, prompt: str, write: int) -> tuple[float, float, int]:
    """(prompt tokens a second, written tokens a second, prompt tokens) for one prompt, from an empty context."""
    tokens = llama.tokenize(f"<|im_start|>user\n{prompt}\nWhat does this say?<|im_end|>\n<|im_start|>assistant\n"
                            .encode(), special=True)
    llama.reset()
    started = time.perf_counter()
    llama.eval(tokens)
    read = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(write):
        token = llama.sample(temp=0.0)
        llama.eval([token])
    return len(tokens) / read, write / (time.perf_counter() - started), len(tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, default=SHIPPED_ADAPTER)
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--write", type=int, default=64)
    args = parser.parse_args()
    settings = load_settings(lm="local")
    engines = {name: LlamaCppEngine(None, settings.data_dir / "models", adapter=adapter, n_threads=settings.lm_threads)
               for name, adapter in (("base", None), ("adapter", args.adapter))}
    models = {name: engine._load().llama for name, engine in engines.items()}
    speeds = {name: ([], []) for name in models}
    lengths = []
    for rep, prompt in enumerate(prompts(args.reps)):
        order = list(models) if rep % 2 == 0 else list(reversed(models))
        for name in order:
            read, write, n = timed(models[name], prompt, args.write)
            speeds[name][0].append(read)
            speeds[name][1].append(write)
        lengths.append(n)
    print(f"{args.reps} prompts of {statistics.median(lengths):.0f} tokens (median), {args.write} tokens written each, "
          f"{settings.lm_threads} threads; adapter {args.adapter}")
    for name, (read, write) in speeds.items():
        print(f"  {name:8s} prompt {statistics.median(read):7.1f} tok/s   writing {statistics.median(write):6.2f} tok/s")
    (base_read, base_write), (lora_read, lora_write) = speeds["base"], speeds["adapter"]
    print(f"  adapter/base time: prompt {statistics.median(base_read) / statistics.median(lora_read):.3f}x, "
          f"writing {statistics.median(base_write) / statistics.median(lora_write):.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
