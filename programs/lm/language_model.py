"""One `dspy.LM` for the whole program: the in-process Gemma engine, or any hosted model string.

Typical use: `lm = make_lm(settings)` (which also points DSPy's response cache at the project's data folder),
then run the program inside `with dspy.context(lm=lm), lm_errors():` so a failing model surfaces as `AgentError`.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Literal

import dspy
from dspy.utils.exceptions import AdapterParseError, LMError

from bookrag.config import Settings
from bookrag.errors import AgentError, ConfigError
from programs.lm.local_engine import LOCAL_MODEL, GemmaEngine


def make_lm(settings: Settings) -> dspy.LM:
    """`settings.lm == "local"` runs Gemma in-process; anything else is a LiteLLM-style model string.

    Hosted keys come from the provider's usual variable (OPENAI_API_KEY, GEMINI_API_KEY, ...; `.env` is
    exported into the environment by `Settings.from_env`). `settings.lm_api_base` points the model at another
    OpenAI-compatible server. Every program gets its LM here, so this is also where the cache is set up.
    """
    configure_cache(settings)
    if settings.lm == "local":
        engine = GemmaEngine(
            settings.data_dir / "models", max_tokens=settings.lm_max_tokens, n_threads=settings.lm_threads
        )
        # In-process failures are not transient: nothing to retry.
        return dspy.LM(LOCAL_MODEL, engine=engine, max_tokens=settings.lm_max_tokens, num_retries=0)
    connection = {"api_base": settings.lm_api_base} if settings.lm_api_base else {}
    try:
        return dspy.LM(
            settings.lm,
            max_tokens=settings.lm_max_tokens,
            timeout=settings.lm_timeout,
            num_retries=settings.lm_retries,
            **connection,
        )
    except (ValueError, LMError) as exc:  # e.g. "openai/", or a reasoning model under 16k max_tokens
        raise ConfigError(f"BOOKRAG_LM={settings.lm!r} cannot be used: {exc}") from None


def lm_mode(lm: dspy.LM) -> Literal["local", "hosted"]:
    return "local" if lm.model.startswith("local/") else "hosted"


def configure_cache(settings: Settings) -> None:
    """DSPy's response cache on disk under the project's data folder, not in ~/.dspy_cache.

    Idempotent: a cache already kept in that folder (and its in-memory entries) is left as it is.
    """
    if getattr(dspy.cache, "disk_cache_dir", None) == str(settings.dspy_cache):
        return
    settings.dspy_cache.mkdir(parents=True, exist_ok=True)
    # Restricted unpickling: DSPy stores plain data (and LiteLLM types it trusts), so a
    # tampered cache file cannot run code and nothing is lost.
    dspy.configure_cache(
        enable_disk_cache=True,
        enable_memory_cache=True,
        disk_cache_dir=str(settings.dspy_cache),
        restrict_pickle=True,
    )


@contextmanager
def lm_errors():
    """Turn a language-model failure (after DSPy's retries) into `AgentError`.

    The message names the model and the kind of failure, never a key: providers
    may echo the Authorization header in their error bodies, so it is scrubbed,
    and the original exception is not chained.
    """
    try:
        yield
    except LMError as exc:
        name = exc.model or _current_model()
        status = f", HTTP {exc.status}" if exc.status else ""
        # The first paragraph is the provider's own words; lm15's "To fix" advice that follows is about lm15.
        detail = _scrub(" ".join(exc.message.split("\n\n")[0].split()))[:400]
        raise AgentError(f"Language model {name} failed ({exc.code}{status}): {detail}") from None
    except AdapterParseError as exc:
        name = _current_model()
        fields = ", ".join(exc.signature.output_fields)
        raise AgentError(f"Language model {name} replied without the expected fields ({fields})") from None


def _current_model() -> str:
    lm = dspy.settings.lm
    return lm.model if lm is not None else "(none configured)"


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)\S+", re.IGNORECASE)


def _scrub(text: str) -> str:
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name):
            text = text.replace(value, "***")
    return _BEARER.sub(r"\1***", text)
