"""All configuration, in one place: environment variables (and `.env`) -> `Settings`.

Every knob a user can turn is a field here; the CLIs only override fields from flags.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from bookrag.errors import ConfigError
from bookrag.redaction import mask_url

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_BOOK = PROJECT_ROOT / "datasets" / "humanoid-primer"
BUNDLED_QUESTIONS = PROJECT_ROOT / "datasets" / "humanoid-primer.csv"
REFUSAL_MESSAGE = "I couldn't find information about that in the book."
SELECTION_REFUSAL_MESSAGE = (
    "I can only answer based on the selected text, and the answer is not present there."
)


class AnswerMode(StrEnum):
    """Who writes the answer: the LM (ChainOfThought) or the book's own sentences (fast, no LM call)."""

    GENERATED = "generated"
    EXTRACTIVE = "extractive"

    @classmethod
    def _missing_(cls, value):
        raise ValueError(f"answer_mode must be one of {', '.join(cls)}, got {value!r}")


class ExpandMode(StrEnum):
    """Query expansion (programs/rag/query_expansion.py, programs/rag/hyde.py)."""

    NONE = "none"
    PARTS = "parts"  # search for each part of a multi-part question too
    HYDE = "hyde"  # search with an LM-written hypothetical answer passage too

    @classmethod
    def _missing_(cls, value):
        raise ValueError(f"expand must be one of {', '.join(cls)}, got {value!r}")


log = logging.getLogger(__name__)


class Secret:
    """A string that never shows itself in repr, str, logs or JSON."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def export_dotenv(path: Path, environ: MutableMapping[str, str] = os.environ) -> list[str]:
    """Copy a `.env` file's variables into the process environment where they are not set already.

    Provider keys (OPENAI_API_KEY, GEMINI_API_KEY, ...) must be in `os.environ`: that is where DSPy and LiteLLM
    look. The environment wins over the file. Returns the names exported; values are never logged.
    """
    from dotenv import dotenv_values

    missing = {key: value for key, value in dotenv_values(path).items() if value is not None and key not in environ}
    environ.update(missing)
    if missing:
        log.debug("exported from %s: %s", path, ", ".join(missing))
    return list(missing)


# The README's configuration table lists the same variables. Parse errors show the value: none of the numbers
# is a secret. Ranges are checked in `Settings.validated`, for values from flags too.
def _int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


def _seconds(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None


@dataclass(frozen=True)
class Settings:
    data_dir: Path = PROJECT_ROOT / "data"
    book_dir: Path = BUNDLED_BOOK
    base_url: str = "/docs"
    # Chunking: 250-word chunks with 40 words of overlap measured best on book A (README).
    chunk_tokens: int = 250
    chunk_overlap: int = 40
    embedder: str = "auto"  # auto | local | cohere
    cohere_api_key: Secret | None = field(default=None, repr=False)
    cohere_model: str = "embed-english-v3.0"
    cohere_timeout: float = 30.0
    qdrant_url: str | None = None
    qdrant_api_key: Secret | None = field(default=None, repr=False)
    qdrant_host: str | None = None
    qdrant_port: int = 6333
    top_k: int = 5
    lm: str = "local"
    lm_max_tokens: int = 256
    lm_timeout: float = 60.0
    lm_retries: int = 3
    lm_api_base: str | None = None  # an OpenAI-compatible server for the hosted model
    local_model: Path | None = None  # a GGUF for `lm == "local"`; default: the packaged Qwen2.5-Coder 1.5B Instruct
    # Who writes the answer: the LM (`generated`, ChainOfThought) or the book's own sentences (`extractive`, fast).
    answer_mode: str = "generated"
    # llama.cpp threads for the local model: 2 is fastest on an idle 2-core machine, but its threads spin-wait
    # on each other, so next to another busy process 1 thread decodes several times faster (llama_cpp_engine.py).
    lm_threads: int = 2
    # Query expansion (none | parts | hyde). None: not configured, so a compiled program keeps the mode it was
    # compiled with, and any other program searches without expansion.
    expand: str | None = None
    dspy_cache_dir: Path | None = None  # default: <data_dir>/dspy-cache
    artifacts_dir: Path = PROJECT_ROOT / "artifacts"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, dotenv: Path | None = None) -> Settings:
        """Read BOOKRAG_*, COHERE_*, QDRANT_* variables from `environ`, by default the process environment.

        Reading the process environment first exports `.env` (default: in the working directory) into it, where
        unset: the provider keys it holds must reach os.environ for DSPy. An explicit `environ` is read as is.
        """
        if environ is None:
            dotenv = dotenv if dotenv is not None else (Path.cwd() / ".env")
            if dotenv.is_file():
                export_dotenv(dotenv)
        env = dict(os.environ if environ is None else environ)

        def get(name: str) -> str | None:
            value = env.get(name)
            return value.strip() if value and value.strip() else None

        values: dict = {}
        if v := get("BOOKRAG_DATA_DIR"):
            values["data_dir"] = Path(v).expanduser()
        if v := get("BOOKRAG_BOOK"):
            values["book_dir"] = Path(v).expanduser()
        if v := get("BOOKRAG_BASE_URL"):
            values["base_url"] = v
        if v := get("BOOKRAG_CHUNK_TOKENS"):
            values["chunk_tokens"] = _int("BOOKRAG_CHUNK_TOKENS", v)
        if v := get("BOOKRAG_CHUNK_OVERLAP"):
            values["chunk_overlap"] = _int("BOOKRAG_CHUNK_OVERLAP", v)
        if v := get("BOOKRAG_EMBEDDER"):
            values["embedder"] = v.lower()
        if v := get("COHERE_API_KEY"):
            values["cohere_api_key"] = Secret(v)
        if v := get("COHERE_MODEL"):
            values["cohere_model"] = v
        if v := get("QDRANT_URL"):
            values["qdrant_url"] = v
        if v := get("QDRANT_API_KEY"):
            values["qdrant_api_key"] = Secret(v)
        if v := get("QDRANT_HOST"):
            values["qdrant_host"] = v
        if v := get("QDRANT_PORT"):
            values["qdrant_port"] = _int("QDRANT_PORT", v)
        if v := get("BOOKRAG_TOP_K"):
            values["top_k"] = _int("BOOKRAG_TOP_K", v)
        if v := get("BOOKRAG_LM"):
            values["lm"] = v
        if v := get("BOOKRAG_LM_MAX_TOKENS"):
            values["lm_max_tokens"] = _int("BOOKRAG_LM_MAX_TOKENS", v)
        if v := get("BOOKRAG_LM_TIMEOUT"):
            values["lm_timeout"] = _seconds("BOOKRAG_LM_TIMEOUT", v)
        if v := get("BOOKRAG_LM_RETRIES"):
            values["lm_retries"] = _int("BOOKRAG_LM_RETRIES", v)
        if v := get("BOOKRAG_LM_API_BASE"):
            values["lm_api_base"] = v.rstrip("/")
        if v := get("BOOKRAG_LOCAL_MODEL"):
            values["local_model"] = Path(v).expanduser()
        if v := get("BOOKRAG_ANSWER_MODE"):
            values["answer_mode"] = v.lower()
        if v := get("BOOKRAG_LM_THREADS"):
            values["lm_threads"] = _int("BOOKRAG_LM_THREADS", v)
        if v := get("BOOKRAG_EXPAND"):
            values["expand"] = v.lower()
        if v := get("BOOKRAG_DSPY_CACHE_DIR"):
            values["dspy_cache_dir"] = Path(v).expanduser()
        if v := get("BOOKRAG_ARTIFACTS_DIR"):
            values["artifacts_dir"] = Path(v).expanduser()
        return cls(**values).validated()

    def replace(self, **changes) -> Settings:
        """A copy with some fields changed (None values are ignored: an unset CLI flag)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None}).validated()

    def validated(self) -> Settings:
        if self.embedder not in ("auto", "local", "cohere"):
            raise ConfigError(f"BOOKRAG_EMBEDDER must be auto, local or cohere, got {self.embedder!r}")
        if self.embedder == "cohere" and not self.cohere_api_key:
            raise ConfigError("BOOKRAG_EMBEDDER=cohere needs COHERE_API_KEY (environment or .env)")
        if self.chunk_tokens < 20:
            raise ConfigError(f"BOOKRAG_CHUNK_TOKENS must be at least 20, got {self.chunk_tokens}")
        if not 0 <= self.chunk_overlap < self.chunk_tokens:
            raise ConfigError("BOOKRAG_CHUNK_OVERLAP must be >= 0 and smaller than BOOKRAG_CHUNK_TOKENS")
        if self.top_k < 1:
            raise ConfigError(f"BOOKRAG_TOP_K must be at least 1, got {self.top_k}")
        # "local" or LiteLLM's provider/model: a bare name would fail only at the first call, as an LM error.
        if self.lm != "local" and not re.fullmatch(r"[\w.-]+/\S+", self.lm):
            raise ConfigError(f"BOOKRAG_LM must be local or a LiteLLM model string provider/model, like "
                              f"openai/gpt-4o-mini; got {self.lm!r}")
        if self.lm_max_tokens < 1:
            raise ConfigError(f"BOOKRAG_LM_MAX_TOKENS must be at least 1, got {self.lm_max_tokens}")
        if not self.lm_timeout > 0:
            raise ConfigError(f"BOOKRAG_LM_TIMEOUT must be more than 0 seconds, got {self.lm_timeout}")
        if self.lm_retries < 0:
            raise ConfigError(f"BOOKRAG_LM_RETRIES must be 0 or more, got {self.lm_retries}")
        if self.lm_threads < 1:
            raise ConfigError(f"BOOKRAG_LM_THREADS must be at least 1, got {self.lm_threads}")
        # Not echoed: a base URL may carry credentials (https://user:password@host/v1).
        if self.lm_api_base and not re.match(r"https?://[^/\s]+", self.lm_api_base):
            raise ConfigError("BOOKRAG_LM_API_BASE must be an http:// or https:// URL")
        if self.qdrant_url and not re.match(r"https?://[^/\s]+", self.qdrant_url):
            raise ConfigError(f"QDRANT_URL must be an http:// or https:// URL, got {mask_url(self.qdrant_url)!r}")
        _check_writable_folder("BOOKRAG_DATA_DIR", self.data_dir)
        if self.answer_mode not in tuple(AnswerMode):
            raise ConfigError(f"BOOKRAG_ANSWER_MODE must be {' or '.join(AnswerMode)}, got {self.answer_mode!r}")
        if self.expand is not None and self.expand not in tuple(ExpandMode):
            raise ConfigError(f"BOOKRAG_EXPAND must be {', '.join(ExpandMode)}, got {self.expand!r}")
        return self

    @property
    def embedder_kind(self) -> str:
        """`local` or `cohere`: auto picks Cohere when a key is configured."""
        if self.embedder == "auto":
            return "cohere" if self.cohere_api_key else "local"
        return self.embedder

    @property
    def store_kind(self) -> str:
        """`server` when QDRANT_URL or QDRANT_HOST is set, else the embedded engine."""
        return "server" if (self.qdrant_url or self.qdrant_host) else "embedded"

    @property
    def store_dir(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def embedding_cache_path(self) -> Path:
        return self.data_dir / "embedding-cache.sqlite"

    @property
    def dspy_cache(self) -> Path:
        return self.dspy_cache_dir or self.data_dir / "dspy-cache"


def _check_writable_folder(name: str, folder: Path) -> None:
    """`folder`, or the part of its path that exists so far, is a folder this process may write in.

    Caught here, a read-only mount or another user's folder is one clear line; later it would be a raw sqlite or
    permission error. (`os.access` asks the kernel, so root with its usual capabilities passes except on a
    read-only mount; what still fails later is reported by the store and the embedding cache.)
    """
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{name} {folder} is not a folder: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{name} {folder} is read-only ({existing} cannot be written): choose a writable folder")


def book_name(book_dir: Path) -> str:
    """A collection-safe name for a book folder (`docs` folders take their parent's name)."""
    path = Path(book_dir).resolve()
    name = path.parent.name if path.name in ("docs", "doc") else path.name
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "book"
