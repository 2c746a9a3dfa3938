"""The programs `compile_program` chooses among, simplest first (docs/how-it-works.md, "Compiling").

1. `zero-shot`: the program with no demos and this book's calibrated refusal gate; the fallback, kept unless a
   compiled candidate beats it outside noise.
2. The configured optimizer's compiled programs. The demo-only optimizers (`bootstrap`, `labeled`) make one per
   share of --max-demos in `DEMO_SHARES` (4: `bootstrap-2`, then `bootstrap-4`; fewer demos is simpler, and a
   shorter prompt). The search optimizers (`random-search`, `mipro`, `gepa`) already choose among programs of their
   own, at several times the LM calls, so each is one candidate named after it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from programs.compile.optimizers import OptimizerSettings

DEMO_OPTIMIZERS = ("bootstrap", "labeled")
DEMO_SHARES = (0.5, 1.0)  # of --max-demos, one compiled candidate each; a share that rounds to 0 demos is none


@dataclass(frozen=True)
class Candidate:
    name: str  # in the manifest and the terminal: "zero-shot", "bootstrap-2"
    description: str  # on its progress bars: "zero-shot", "bootstrap, 2 demos"
    settings: OptimizerSettings | None = None  # how it is compiled; None: the zero-shot program


ZERO_SHOT = Candidate("zero-shot", "zero-shot")


def candidates(optimizer: OptimizerSettings) -> list[Candidate]:
    """Zero-shot and the compiled candidates of `optimizer`, simplest first."""
    if optimizer.name not in DEMO_OPTIMIZERS:
        return [ZERO_SHOT, Candidate(optimizer.name, optimizer.name, optimizer)]
    counts = sorted({int(optimizer.max_demos * share) for share in DEMO_SHARES} - {0})
    return [ZERO_SHOT, *(Candidate(f"{optimizer.name}-{n}", f"{optimizer.name}, {n} demos",
                                   replace(optimizer, max_demos=n)) for n in counts)]
