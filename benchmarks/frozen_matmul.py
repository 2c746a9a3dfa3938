"""The frozen layers' matrix products in three precisions, on this CPU: what a training run's frozen pass would cost
in float32, bfloat16 and int8 (torch's dynamic quantized linear, per-channel weights), and how far each is from
float32.

    python benchmarks/frozen_matmul.py [--tokens 330] [--repeats 7]

One product of the packaged model's MLP shape (tokens x 1536 by 1536 x 8960), the median of `--repeats` runs after a
warm-up, each precision interleaved with the others so that a busy machine slows all three alike. Prints seconds and
the relative error against float32. Needs torch (the `train` extra).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from programs.train.qwen2 import packed_int8

HIDDEN, FFN = 1536, 8960  # Qwen2.5-1.5B's MLP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=330)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    x, weight = torch.randn(args.tokens, HIDDEN), torch.randn(FFN, HIDDEN) * 0.02
    x16, weight16 = x.bfloat16(), weight.bfloat16()
    packed = packed_int8(weight)
    products = {"float32": lambda: x @ weight.T, "bfloat16": lambda: (x16 @ weight16.T).float(),
                "int8": lambda: torch.ops.quantized.linear_dynamic(x, packed)}
    seconds = {name: [] for name in products}
    with torch.no_grad():
        for product in products.values():
            product()
        for _ in range(args.repeats):
            for name, product in products.items():
                started = time.perf_counter()
                product()
                seconds[name].append(time.perf_counter() - started)
        reference = products["float32"]()
        print(f"{args.tokens} x {HIDDEN} by {HIDDEN} x {FFN}, {torch.get_num_threads()} threads, "
              f"quantized engine {torch.backends.quantized.engine}")
        for name, product in products.items():
            error = ((product() - reference).norm() / reference.norm()).item()
            print(f"  {name:9s} {statistics.median(seconds[name]):.3f} s   relative error {error:.4f}")


if __name__ == "__main__":
    main()
