"""A predictor awaited on an event loop, whatever its LM's engine: through DSPy's async path (`acall`) when the LM
has one, else in a worker thread.

DSPy refuses to await a custom engine given without its async counterpart (`dspy.LM(engine=..., async_engine=...)`):
`acall` raises `LMUnsupportedFeatureError` rather than run the sync engine in a thread. The local llama.cpp engine
(`programs/lm/llama_cpp_engine.py`) is such an engine; its own lock makes concurrent calls from threads wait their
turn.
"""

from __future__ import annotations

import asyncio

import dspy


def has_async_path(lm) -> bool:
    """Whether DSPy can await `lm`: a provider model (LiteLLM, lm15) or a custom engine with its async counterpart."""
    engine = getattr(lm, "_engine_spec", None)  # DSPy 3.4 keeps the engine pair on these two attributes
    return isinstance(engine, str) or getattr(lm, "_async_engine_spec", None) is not None


async def apredict(predictor: dspy.Module, **inputs) -> dspy.Prediction:
    """`predictor(**inputs)` under the LM in DSPy's settings, awaited without blocking the event loop."""
    if has_async_path(dspy.settings.lm):
        return await predictor.acall(**inputs)
    return await asyncio.to_thread(predictor, **inputs)
