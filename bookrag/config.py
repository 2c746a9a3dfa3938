"""All configuration, in one place: environment variables (and `.env`) -> `Settings`.

Every knob a user can turn is a field here; the CLIs only override fields from flags.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import logging
import os
import re
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal, get_args
from urllib.parse import SplitResult, urlsplit

from bookrag.errors import ConfigError
from bookrag.redaction import mask_url

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_BOOK = PROJECT_ROOT / "datasets" / "humanoid-primer"
BUNDLED_QUESTIONS = PROJECT_ROOT / "datasets" / "humanoid-primer.csv"
# The trained reader: a LoRA adapter for the packaged model (adapters/reader/manifest.json says how it was trained).
SHIPPED_ADAPTER = PROJECT_ROOT / "adapters" / "reader" / "adapter.gguf"
REFUSAL_MESSAGE = "I couldn't find information about that in the book."
SELECTION_REFUSAL_MESSAGE = (
    "I can only answer based on the selected text, and the answer is not present there."
)
# Passages per question unless set (BOOKRAG_TOP_K, --top-k), and at most: every one is sent to the LM, and more than
# this is most of a book on every call (`--top-k 10000` sent all 158 passages of the bundled book, 125 KB, to a
# hosted model).
DEFAULT_TOP_K = 5
MAX_TOP_K = 50
# How a search finds passages: by meaning (dense), by the book's words (sparse, BM25), or both, fused (hybrid).
SearchMode = Literal["dense", "sparse", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
DEFAULT_SEARCH_MODE: SearchMode = "hybrid"


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

    values = dotenv_values(stream=io.StringIO(_dotenv_text(path)))
    missing = {key: value for key, value in values.items() if value is not None and key not in environ}
    environ.update(missing)
    if missing:
        log.debug("exported from %s: %s", path, ", ".join(missing))
    return list(missing)


def _dotenv_text(path: Path) -> str:
    """The `.env` file's text. Unreadable or not UTF-8 (a file saved as Latin-1, UTF-16) is a ConfigError naming the
    file and line; the bytes are not shown, as they may be part of a key."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror}): make it readable, or remove it") from None
    try:
        return data.decode("utf-8")  # python-dotenv skips a byte order mark itself
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {exc.start - line_start + 1} of the line); re-save "
                          "the file as UTF-8") from None


# -- the variables: environment variable -> field, parser and range ----------------------------------------------
# The README's configuration table lists the same variables. Parse errors show the value (none of the numbers is a
# secret); a URL is shown without its credentials, a secret never.


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _adapter(raw: str) -> Path | None:
    """A LoRA adapter GGUF, or `none` for the packaged model as it is."""
    return None if raw.lower() == "none" else _path(raw)


def _a_file(value: Path) -> str | None:
    return None if value.is_file() else f"must be a file (a LoRA adapter GGUF) or none, got {value}"


def _at_least(low: float):
    return lambda value: None if value >= low else f"must be at least {low}, got {value}"


def _above(low: float):
    return lambda value: None if value > low else f"must be more than {low}, got {value}"


def _between(low: int, high: int):
    return lambda value: None if low <= value <= high else f"must be between {low} and {high}, got {value}"


def _one_of(*choices: str):
    listed = f"{', '.join(choices[:-1])} or {choices[-1]}"
    return lambda value: None if value in choices else f"must be {listed}, got {value!r}"


def _http_url(echo: bool):
    """An http(s) URL with a host and a port a client can use; shown in the error with its credentials masked, or
    (a base URL may carry them) not at all."""
    def check(value: str) -> str | None:
        got = f", got {mask_url(value)!r}" if echo else ""
        if not re.match(r"https?://[^/\s]+", value):
            return "must be an http:// or https:// URL" + got
        try:
            parts = urlsplit(value)
        except ValueError:  # an unclosed `[`, or a host that is no host once normalized; the message would echo it
            return f"is not a URL a client can read: check its host (an IPv6 address goes in [ ]){got}"
        if not parts.hostname:
            return "names no host" + got
        if not 1 <= _port(parts) <= 65535:
            return "must name a port from 1 to 65535" + got
        return None
    return check


def _port(parts: SplitResult) -> int:
    """The URL's port (443 or 80 when it names none); 0 when it is not a number or beyond 65535."""
    try:
        port = parts.port
    except ValueError:
        return 0
    return (443 if parts.scheme == "https" else 80) if port is None else port


def _lm_string(value: str) -> str | None:
    """`local` or LiteLLM's provider/model: a bare name would fail only at the first call, as an LM error."""
    if value == "local" or re.fullmatch(r"[\w.-]+/\S+", value):
        return None
    return f"must be local or a LiteLLM model string provider/model, like openai/gpt-4o-mini; got {value!r}"


@dataclass(frozen=True)
class Variable:
    name: str  # the environment variable
    field: str  # the Settings field it sets
    parse: Callable[[str], object] = str  # raw text -> value; ValueError: not a value of its kind
    kind: str = ""  # what a value looks like, for a parse error ("a whole number")
    check: Callable[[object], str | None] | None = None  # a parsed value (from the environment or a flag) -> problem

    def problem(self, value) -> str | None:
        """What is wrong with a parsed value, or None: the one place a setting's range is checked, whether the
        value comes from the environment, a flag or a library call."""
        return self.check(value) if self.check is not None else None


def variable_for(field: str) -> Variable:
    """The variable that sets the Settings field `field`."""
    return next(v for v in VARIABLES if v.field == field)


def setting_problem(field: str, value) -> str | None:
    """What is wrong with `value` for the Settings field `field`, or None (`Variable.problem`)."""
    return variable_for(field).problem(value)


_NUMBER, _SECONDS = {"parse": int, "kind": "a whole number"}, {"parse": float, "kind": "a number of seconds"}
VARIABLES = (
    Variable("BOOKRAG_DATA_DIR", "data_dir", _path),
    Variable("BOOKRAG_BOOK", "book_dir", _path),
    Variable("BOOKRAG_BASE_URL", "base_url"),
    Variable("BOOKRAG_CHUNK_TOKENS", "chunk_tokens", **_NUMBER, check=_at_least(20)),
    Variable("BOOKRAG_CHUNK_OVERLAP", "chunk_overlap", **_NUMBER, check=_at_least(0)),
    Variable("BOOKRAG_EMBEDDER", "embedder", str.lower, check=_one_of("auto", "local", "cohere")),
    Variable("BOOKRAG_EMBED_THREADS", "embed_threads", **_NUMBER, check=_at_least(1)),
    Variable("COHERE_API_KEY", "cohere_api_key", Secret),
    Variable("COHERE_MODEL", "cohere_model"),
    Variable("BOOKRAG_RERANKER", "reranker", str.lower, check=_one_of("auto", "cohere", "none")),
    Variable("COHERE_RERANK_MODEL", "cohere_rerank_model"),
    Variable("QDRANT_URL", "qdrant_url", check=_http_url(echo=True)),
    Variable("QDRANT_API_KEY", "qdrant_api_key", Secret),
    Variable("QDRANT_HOST", "qdrant_host"),
    Variable("QDRANT_PORT", "qdrant_port", **_NUMBER, check=_between(1, 65535)),
    Variable("BOOKRAG_TOP_K", "top_k", **_NUMBER, check=_between(1, MAX_TOP_K)),
    Variable("BOOKRAG_LM", "lm", check=_lm_string),
    Variable("BOOKRAG_LM_MAX_TOKENS", "lm_max_tokens", **_NUMBER, check=_at_least(1)),
    Variable("BOOKRAG_LM_TIMEOUT", "lm_timeout", **_SECONDS, check=_above(0)),
    Variable("BOOKRAG_LM_RETRIES", "lm_retries", **_NUMBER, check=_at_least(0)),
    Variable("BOOKRAG_LM_API_BASE", "lm_api_base", lambda raw: raw.rstrip("/"), check=_http_url(echo=False)),
    Variable("BOOKRAG_LOCAL_MODEL", "local_model", _path),
    Variable("BOOKRAG_LOCAL_ADAPTER", "local_adapter", _adapter, check=_a_file),
    Variable("BOOKRAG_ANSWER_MODE", "answer_mode", str.lower, check=_one_of(*AnswerMode)),
    Variable("BOOKRAG_LM_THREADS", "lm_threads", **_NUMBER, check=_at_least(1)),
    Variable("BOOKRAG_EXPAND", "expand", str.lower, check=_one_of(*ExpandMode)),
    Variable("BOOKRAG_DSPY_CACHE_DIR", "dspy_cache_dir", _path),
    Variable("BOOKRAG_ARTIFACTS_DIR", "artifacts_dir", _path),
)


# A BOOKRAG_* name is matched without its prefix, which every one shares (with it, BOOKRAG_FOO is 0.87 like
# BOOKRAG_BOOK). QDRANT_* and COHERE_* names belong to other tools too (the Qdrant server reads QDRANT__SERVICE__...):
# one is reported only when this close to one of ours (difflib's ratio): QDRANT_APIKEY (0.96), QDRANT_URI (0.90),
# COHERE_KEY (0.83) are typos of ours; QDRANT_GRPC_PORT (0.81, to QDRANT_PORT) and COHERE_TIMEOUT (0.69) are not.
_PREFIX = "BOOKRAG_"
_OTHER_TOOLS_CUTOFF = 0.82
_warned_names: set[str] = set()


def unknown_variable_warnings(names: Iterable[str]) -> list[str]:
    """A warning for each BOOKRAG_* name that is no setting (a typo is otherwise ignored without a word), naming the
    closest setting; and for each QDRANT_*/COHERE_* name that is not ours but close to one of ours."""
    known = {variable.name.removeprefix(_PREFIX): variable.name for variable in VARIABLES}
    warnings = []
    for name in sorted(set(names) - set(known.values())):
        upper = name.upper()
        ours = upper.startswith(_PREFIX)
        if not ours and (not upper.startswith(("QDRANT_", "COHERE_")) or upper.startswith("QDRANT__")):
            continue
        close = difflib.get_close_matches(upper.removeprefix(_PREFIX), known, n=1,
                                          cutoff=0.6 if ours else _OTHER_TOOLS_CUTOFF)
        if close:
            warnings.append(f"{name} is not a bookrag setting; did you mean {known[close[0]]}?")
        elif ours:
            warnings.append(f"{name} is not a bookrag setting; see the README's configuration table")
    return warnings


def warn_unknown_variables(names: Iterable[str]) -> None:
    """Log `unknown_variable_warnings`, each name at most once per process (settings are read more than once).
    Names only: a value may be a secret."""
    names = set(names) - _warned_names
    for warning in unknown_variable_warnings(names):
        log.warning(warning)
    _warned_names.update(names)


@dataclass(frozen=True)
class Settings:
    data_dir: Path = PROJECT_ROOT / "data"
    book_dir: Path = BUNDLED_BOOK
    base_url: str = "/docs"
    # Chunking, in tokens: words and punctuation marks (retrievers/chunking.py's count_tokens), not the LM's tokens.
    # A chunk holds at most 250, of which up to 40 repeat the chunk before; 250 against 150 on book A:
    # docs/results.md (2026-11-22, "Chunk size").
    chunk_tokens: int = 250
    chunk_overlap: int = 40
    embedder: str = "auto"  # auto | local | cohere
    # numpy (BLAS) threads for the local embedding model. 1: on a busy 2-core machine 2 spinning threads made
    # embedding 3-7x slower; 2 may pay for ingest on an idle machine, not measured (docs/decisions.md, 2026-11-25).
    embed_threads: int = 1
    cohere_api_key: Secret | None = field(default=None, repr=False)
    cohere_model: str = "embed-english-v3.0"
    cohere_timeout: float = 30.0
    reranker: str = "auto"  # auto | cohere | none
    cohere_rerank_model: str = "rerank-v3.5"
    qdrant_url: str | None = None
    qdrant_api_key: Secret | None = field(default=None, repr=False)
    qdrant_host: str | None = None
    qdrant_port: int = 6333
    top_k: int = DEFAULT_TOP_K
    lm: str = "local"
    lm_max_tokens: int = 256
    lm_timeout: float = 60.0
    lm_retries: int = 3
    lm_api_base: str | None = None  # an OpenAI-compatible server for the hosted model
    local_model: Path | None = None  # a GGUF for `lm == "local"`; default: the packaged Qwen2.5-Coder 1.5B Instruct
    # A LoRA adapter the local model answers with; default: the shipped trained reader (None: the model as it is).
    local_adapter: Path | None = SHIPPED_ADAPTER if SHIPPED_ADAPTER.is_file() else None
    # Who writes the answer: the LM (`generated`, ChainOfThought) or the book's own sentences (`extractive`, fast).
    answer_mode: str = AnswerMode.GENERATED
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
        """Read the `VARIABLES` from `environ`, by default the process environment.

        Reading the process environment first exports `.env` (default: in the working directory) into it, where
        unset: the provider keys it holds must reach os.environ for DSPy. An explicit `environ` is read as is.
        """
        if environ is None:
            dotenv = dotenv if dotenv is not None else (Path.cwd() / ".env")
            if dotenv.is_file():
                export_dotenv(dotenv)
        env = os.environ if environ is None else environ
        warn_unknown_variables(env)
        values = {}
        for variable in VARIABLES:
            raw = (env.get(variable.name) or "").strip()
            if not raw:
                continue
            try:
                values[variable.field] = variable.parse(raw)
            except ValueError:
                raise ConfigError(f"{variable.name} must be {variable.kind}, got {raw!r}") from None
        return cls(**values).validated()

    def replace(self, **changes) -> Settings:
        """A copy with some fields changed (None values are ignored: an unset CLI flag)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None}).validated()

    def validated(self) -> Settings:
        """Every value in its range, whether it came from the environment or a flag."""
        for variable in VARIABLES:
            value = getattr(self, variable.field)
            if value is not None and (problem := variable.problem(value)):
                raise ConfigError(f"{variable.name} {problem}")
        if self.chunk_overlap >= self.chunk_tokens:
            raise ConfigError("BOOKRAG_CHUNK_OVERLAP must be smaller than BOOKRAG_CHUNK_TOKENS")
        if self.embedder == "cohere" and not self.cohere_api_key:
            raise ConfigError("BOOKRAG_EMBEDDER=cohere needs COHERE_API_KEY (environment or .env)")
        if self.reranker == "cohere" and not self.cohere_api_key:
            raise ConfigError("BOOKRAG_RERANKER=cohere needs COHERE_API_KEY (environment or .env)")
        _check_writable_folder("BOOKRAG_DATA_DIR", self.data_dir)
        _check_writable_folder("BOOKRAG_DSPY_CACHE_DIR", self.dspy_cache)
        _check_folder("BOOKRAG_ARTIFACTS_DIR", self.artifacts_dir)  # may be read-only: ask.py only reads programs
        return self

    @property
    def embedder_kind(self) -> str:
        """`local` or `cohere`: auto picks Cohere when a key is configured."""
        if self.embedder == "auto":
            return "cohere" if self.cohere_api_key else "local"
        return self.embedder

    @property
    def reranker_kind(self) -> str:
        """`cohere` or `none`: auto reranks with Cohere when a key is configured."""
        if self.reranker == "auto":
            return "cohere" if self.cohere_api_key else "none"
        return self.reranker

    @property
    def store_kind(self) -> str:
        """`server` when QDRANT_URL or QDRANT_HOST is set, else the embedded engine."""
        return "server" if (self.qdrant_url or self.qdrant_host) else "embedded"

    @property
    def store_dir(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def embedding_cache_path(self) -> Path:
        """The cache of model outputs: embeddings, and the reranker's scores."""
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
    existing = _check_folder(name, folder)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{name} {folder} is read-only ({existing} cannot be written): choose a writable folder")


def _check_folder(name: str, folder: Path) -> Path:
    """`folder` is a folder, or can be made one: neither it nor a parent is a file. Returns the part that exists."""
    existing = nearest_existing(folder)
    if not existing.is_dir():
        raise ConfigError(f"{name} {folder} is not a folder: {existing} is a file; point {name} at a folder")
    return existing


def nearest_existing(path: Path) -> Path:
    """`path` if it exists, else its nearest parent that does (a folder about to be made is judged by where it
    would go)."""
    path = Path(path)
    return next(p for p in (path, *path.parents) if p.exists())


def book_name(book_dir: Path) -> str:
    """A collection-safe name for a book folder (`docs` folders take their parent's name)."""
    path = Path(book_dir).resolve()
    name = path.parent.name if path.name in ("docs", "doc") else path.name
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "book"
