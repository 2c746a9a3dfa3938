"""The reader training's frozen pass on the packaged model in float32, bfloat16 and int8 (Qwen2Decoder's
`quantize_frozen`): seconds per example and how far each precision's output of the frozen layers is from float32's.

    python benchmarks/frozen_precision.py [--examples 6] [--tokens 600] [--frozen-layers 20]

Each example is a stretch of the bundled book, tokenized by the packaged model's tokenizer (about as long as a
training example's own tokens), run through the model's lowest --frozen-layers layers as the training's frozen pass
runs them. Prints the median seconds per example and the relative error (norm of the difference over the norm of
float32's output) of each precision. bfloat16 is fast only where the CPU multiplies it natively (AVX-512 BF16 or AMX:
programs/train/cpu.py). Needs torch and gguf (the `train` extra) and about 10 GB of memory. Run it alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch

from bookrag.cli import load_settings
from bookrag.config import BUNDLED_BOOK
from programs.lm.llama_cpp_engine import LlamaCppEngine
from programs.train.cpu import cpu_description
from programs.train.gguf_weights import read_gguf
from programs.train.qwen2 import Qwen2Decoder


def book_tokens(model_path: Path, examples: int, length: int) -> list[list[int]]:
    from llama_cpp import Llama

    vocab = Llama(str(model_path), vocab_only=True, verbose=False)
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(BUNDLED_BOOK.rglob("*.md")))
    tokens = vocab.tokenize(text.encode(), add_bos=False)
    step = (len(tokens) - length) // examples
    return [tokens[i * step:i * step + length] for i in range(examples)]


def frozen_outputs(decoder: Qwen2Decoder, examples: list[list[int]], layers: range):
    outputs, seconds = [], []
    with torch.no_grad():
        for tokens in examples:
            started = time.perf_counter()
            hidden, _ = decoder.run(decoder.embed(torch.tensor([tokens])), layers, 0)
            seconds.append(time.perf_counter() - started)
            outputs.append(hidden[0].float())
    return outputs, statistics.median(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--frozen-layers", type=int, default=20)
    args = parser.parse_args()
    settings = load_settings(lm="local")
    path = LlamaCppEngine(None, settings.data_dir / "models").model_path()
    examples = book_tokens(path, args.examples, args.tokens)
    shape, tensors = read_gguf(path)
    layers = range(args.frozen_layers)
    reference, wide = frozen_outputs(Qwen2Decoder(shape, tensors), examples, layers)
    print(f"{cpu_description()}, {torch.get_num_threads()} threads; {args.examples} examples of {args.tokens} tokens "
          f"through {args.frozen_layers} layers")
    print(f"  float32  {wide:6.2f} s an example")
    for name in ("bfloat16", "int8"):
        decoder = Qwen2Decoder(shape, tensors, dtype=torch.bfloat16 if name == "bfloat16" else torch.float32)
        if name == "int8":
            decoder.quantize_frozen(layers)
        outputs, seconds = frozen_outputs(decoder, examples, layers)
        errors = [((out - ref).norm() / ref.norm()).item() for out, ref in zip(outputs, reference, strict=True)]
        print(f"  {name:8s} {seconds:6.2f} s an example ({wide / seconds:.1f}x float32's speed), relative error "
              f"{statistics.median(errors):.4f} (median), {max(errors):.4f} (worst)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
