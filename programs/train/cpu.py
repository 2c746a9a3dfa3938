"""The CPU training runs on: what the manifest says of it, and the precision it trains in. bfloat16 where the CPU
multiplies it natively (AVX-512 BF16 or AMX: a step took 4.7 s against 13-17 s in float32, docs/results.md,
2026-11-27), float32 elsewhere (emulated bfloat16 was 4.5x slower than float32 on an AVX2 machine: docs/results.md,
2026-11-27 evening)."""

from __future__ import annotations

import platform
from pathlib import Path

_NATIVE_BF16 = ("avx512_bf16", "amx_bf16")


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def _flags() -> set[str]:
    line = next((line for line in _cpuinfo() if line.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def training_precision() -> str:
    """The torch dtype's name: `bfloat16` or `float32`."""
    return "bfloat16" if _flags() & set(_NATIVE_BF16) else "float32"


def cpu_description() -> str:
    """`AMD EPYC, 2 cores, AVX2`: the model name, the cores, and the widest vector instructions."""
    names = [line.partition(":")[2].strip() for line in _cpuinfo() if line.startswith("model name")]
    flags = _flags()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{names[0] if names else platform.processor() or platform.machine()}, {len(names)} cores, {isa}"
