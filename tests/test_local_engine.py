"""The in-process Gemma engine: its prompt format, and one real call through dspy.LM."""

from __future__ import annotations

import importlib.util
import time

import dspy
import pytest
from dspy.clients.cache import Cache
from dspy.lm15 import Message, Request

from bookrag.config import Settings
from programs.lm.language_model import make_lm
from programs.lm.local_engine import LOCAL_MODEL, gemma_prompt

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python is not installed (it has no wheel here and compiles from source, ~11 min)",
)


def test_prompt_folds_system_text_into_the_first_user_turn():
    request = Request(
        model=LOCAL_MODEL,
        system="Answer briefly.",
        messages=(Message.user("Hi"), Message.assistant("Hello"), Message.user("Name a color.")),
    )
    assert gemma_prompt(request) == (
        "<start_of_turn>user\nAnswer briefly.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nName a color.<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


@pytest.mark.slow
@needs_llama
def test_real_call_returns_text_within_the_cap_and_reports_usage(monkeypatch, record_property):
    # The project's data dir: the .gguf is assembled there once and reused by later runs.
    lm = make_lm(Settings(lm="local", lm_max_tokens=16))
    # After make_lm, which turns the project's cache on: measure the model, not a cache.
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))

    start = time.perf_counter()
    [text] = lm("Name a color.")
    seconds = time.perf_counter() - start
    record_property("seconds_with_model_load", round(seconds, 2))

    usage = lm.history[-1]["usage"]
    assert text.strip()
    assert 0 < usage["completion_tokens"] <= 16
    assert usage["prompt_tokens"] > 0
    assert seconds < 60  # load (~1 s) plus 16 tokens; minutes would mean an uncapped run
