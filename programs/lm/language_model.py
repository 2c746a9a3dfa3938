"""One `dspy.LM` for the whole program: an instruction-tuned GGUF in-process, or any hosted model string.

Typical use: `lm = make_lm(settings)` (which also points DSPy's response cache at the project's data folder),
then run the program inside `with dspy.context(lm=lm), lm_errors():` so a failing model surfaces as `AgentError`.
"""

from __future__ import annotations

import re
import socket
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.utils.exceptions import AdapterParseError, LMConfigurationError, LMError

from bookrag.config import Settings
from bookrag.errors import AgentError, ConfigError
from bookrag.redaction import mask_url, scrub, url_credentials
from programs.lm.llama_cpp_engine import LlamaCppEngine
from programs.lm.reader_adapter import ReaderAdapter
from programs.lm.response_cache import ResponseCache

# What DSPy's cache keeps in its folder: diskcache's FanoutCache one folder per shard (000, 001, ...); a plain
# diskcache.Cache, its database files.
_CACHE_ENTRY = re.compile(r"\d{3}|cache\.db(-wal|-shm)?")


def make_lm(settings: Settings) -> dspy.LM:
    """`settings.lm == "local"` runs a GGUF in-process (`BOOKRAG_LOCAL_MODEL`, else the packaged Qwen2.5-Coder
    1.5B Instruct); anything else is a LiteLLM-style model string.

    Hosted keys come from the provider's usual variable (OPENAI_API_KEY, GEMINI_API_KEY, ...; `.env` is
    exported into the environment by `Settings.from_env`). `settings.lm_api_base` points the model at another
    OpenAI-compatible server. Every program gets its LM here, so this is also where the cache is set up.
    """
    configure_cache(settings)
    if settings.lm == "local":
        engine = LlamaCppEngine(settings.local_model, settings.data_dir / "models", adapter=settings.local_adapter,
                                max_tokens=settings.lm_max_tokens, n_threads=settings.lm_threads)
        return local_lm(engine)
    # An OpenAI-compatible server (llama.cpp, vLLM, Ollama) goes through LiteLLM's route, which spells the token cap
    # `max_tokens`: DSPy's native route sends `max_completion_tokens`, which llama.cpp's server ignores (an
    # uncapped answer ran to 6,928 tokens).
    connection = {"api_base": settings.lm_api_base, "engine": "litellm"} if settings.lm_api_base else {}
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


def local_lm(engine: LlamaCppEngine, training: dict | None = None) -> LocalLM:
    """The `dspy.LM` of an in-process model; `training`: the record of the training that wrote its adapter, when
    this process trained it."""
    # In-process failures are not transient: nothing to retry.
    return LocalLM(f"local/{engine.name}", engine=engine, training=training, max_tokens=engine.max_tokens,
                   num_retries=0, temperature=0.0)


class LocalLM(dspy.LM):
    """An in-process model's `dspy.LM`. DSPy keys its cache by the call's arguments, and the model string names the
    file only by its stem: the `metadata` tag (which the engine ignores) keys the answers by the GGUF and the adapter
    themselves, so another model file or adapter never replays this one's answers.

    The tag is made when a call reads the arguments, not when the LM is made: its adapter part is the checksum of
    the whole file, which a program that never calls the model (extractive answers) must not pay for.

    `adapter` says which LoRA adapter answers (`lm_adapter` asks any LM)."""

    def __init__(self, *args, training: dict | None = None, **kwargs):
        self._tagged = False  # dspy.LM's __init__ reads the arguments too
        super().__init__(*args, **kwargs)
        self._training = training
        self._tagged = True

    @property
    def adapter(self) -> ReaderAdapter | None:
        """The LoRA adapter the engine applies, None for the model alone."""
        path = self.engine.adapter
        return ReaderAdapter(path, self._training) if path is not None else None

    @property
    def kwargs(self) -> dict:
        if self._tagged:
            self._kwargs["metadata"] = {"gguf": self.engine.identity}
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._kwargs = value


def lm_adapter(lm: dspy.LM | None) -> ReaderAdapter | None:
    """Which LoRA adapter answers for `lm`: the local model's, None without one and for a hosted model."""
    return lm.adapter if isinstance(lm, LocalLM) else None


def with_adapter(lm: dspy.LM, adapter: ReaderAdapter | None) -> LocalLM:
    """The same local model with another LoRA adapter (None: none), e.g. a compiled program's trained reader."""
    if not isinstance(lm, LocalLM) or not isinstance(lm.engine, LlamaCppEngine):
        raise ConfigError(f"a trained reader runs on the local model, not on {lm.model}: set BOOKRAG_LM=local")
    if lm_adapter(lm) == adapter:
        return lm
    engine = lm.engine
    adapted = LlamaCppEngine(engine.gguf, engine.models_dir, adapter=adapter.path if adapter else None,
                             max_tokens=engine.max_tokens, n_ctx=engine.n_ctx, n_threads=engine.n_threads)
    return local_lm(adapted, adapter.training if adapter else None)


def lm_mode(lm: dspy.LM) -> Literal["local", "hosted"]:
    return "local" if lm.model.startswith("local/") else "hosted"


def configure_cache(settings: Settings) -> None:
    """DSPy's response cache on disk under the project's data folder, not in ~/.dspy_cache; a private folder (0700),
    since it holds the prompts and the answers.

    Idempotent: a cache already kept in that folder (and its in-memory entries) is left as it is.
    """
    folder = settings.dspy_cache
    if getattr(dspy.cache, "disk_cache_dir", None) == str(folder):
        return
    try:
        _make_private_cache_folder(folder)
        # Restricted unpickling: DSPy stores plain data (and LiteLLM types it trusts), so a
        # tampered cache file cannot run code and nothing is lost.
        cache = ResponseCache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(folder),
                              disk_size_limit_bytes=DISK_CACHE_LIMIT, restrict_pickle=True)
    except (OSError, sqlite3.Error) as exc:  # Settings checked the path; this is another user's folder, or a race
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"BOOKRAG_DSPY_CACHE_DIR {folder} cannot hold the response cache ({why}): choose a folder "
                          "of your own that you can write") from None
    with dspy._cache_lock:  # the lock DSPy's own configure_cache holds against a concurrent lazy build
        dspy.cache = cache


def _make_private_cache_folder(folder: Path) -> None:
    """The cache's folder, made if missing, private (0700). An existing one is made private too (made by hand, or
    before this rule) unless it holds anything but the cache's own entries: chmod on the user's home or /tmp would
    lock everyone else out of it, and the cache would litter it."""
    folder.mkdir(parents=True, exist_ok=True)
    if others := sorted(entry.name for entry in folder.iterdir() if not _CACHE_ENTRY.fullmatch(entry.name)):
        raise ConfigError(f"BOOKRAG_DSPY_CACHE_DIR {folder} holds other files ({', '.join(others[:3])}"
                          f"{', ...' if len(others) > 3 else ''}): point it at a folder of its own, such as "
                          f"{folder / 'bookrag-dspy-cache'}")
    folder.chmod(0o700)


@contextmanager
def lm_errors(parse_errors: bool = True):
    """Turn a language-model failure (after DSPy's retries) into `AgentError`, or `ConfigError` when the model is
    misconfigured (a BOOKRAG_LOCAL_MODEL that is not a GGUF file, a missing packaged part): that is no run-time
    failure, and retrying will not help.

    The message names the model and the kind of failure, never a key: providers
    may echo the Authorization header in their error bodies, so it is scrubbed,
    and the original exception is not chained.
    """
    try:
        yield
    except LMError as exc:
        if isinstance(exc.__cause__, ConfigError):  # bookrag's own check inside the local engine: already clear
            raise exc.__cause__ from None
        lm = dspy.settings.lm
        name = lm.model if lm is not None else exc.model  # as the user configured it, provider prefix included
        api_base = lm.kwargs.get("api_base") if lm is not None else None
        # The first paragraph is the provider's own words; lm15's "To fix" advice that follows is about lm15. A
        # server may echo the Authorization header, which carries the base URL's userinfo as Basic credentials.
        detail = scrub(" ".join(exc.message.split("\n\n")[0].split()), url_credentials(api_base or ""))[:400]
        if api_base:  # say which server, without its credentials
            detail += f" (server {mask_url(api_base)})"
        if "timed out" in detail:  # lm15 advises its own Timeouts(read=...); the user's knob is the variable
            raise AgentError(f"Language model {name} timed out ({detail.split(';')[0]}): raise BOOKRAG_LM_TIMEOUT "
                             "(seconds per call) if the model needs longer") from None
        error = ConfigError if isinstance(exc, LMConfigurationError) else AgentError
        raise error(f"Language model {name} failed ({_what_failed(exc)}): {detail}") from None
    except AdapterParseError as exc:
        if not parse_errors:
            raise
        name = _current_model()
        fields = ", ".join(exc.signature.output_fields)
        raise AgentError(f"Language model {name} replied without the expected fields ({fields})") from None


# LiteLLM's words for a 200 reply whose body is not a chat completion (a proxy's HTML page); its error carries no
# response to tell it by.
_NOT_JSON = "Empty or invalid response from LLM endpoint"


def _what_failed(exc: LMError) -> str:
    """The kind of failure, as it happened: LiteLLM reports a refused connection and a reply that is not JSON as a
    server error, HTTP 500, which no server sent."""
    causes = _causes(exc)
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return "connection refused"
    if any(isinstance(cause, ConnectionError | socket.gaierror) for cause in causes):
        return "cannot connect"
    if _NOT_JSON in exc.message:
        return "the reply is not JSON"
    return f"{exc.code}, HTTP {exc.status}" if exc.status else exc.code


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from, innermost last."""
    chain = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _current_model() -> str:
    lm = dspy.settings.lm
    return lm.model if lm is not None else "(none configured)"
