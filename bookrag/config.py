"""All configuration, in one place: environment variables (and `.env`) -> `Settings`.

Every knob a user can turn is a field here; the CLIs only override fields from flags.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from bookrag.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_BOOK = PROJECT_ROOT / "datasets" / "humanoid-primer"
BUNDLED_QUESTIONS = PROJECT_ROOT / "datasets" / "humanoid-primer.csv"
REFUSAL_MESSAGE = "I couldn't find information about that in the book."
SELECTION_REFUSAL_MESSAGE = (
    "I can only answer based on the selected text, and the answer is not present there."
)


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


# (variable, field, parser) — the configuration table in the README lists the same variables.
def _int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


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
    dspy_cache_dir: Path | None = None  # default: <data_dir>/dspy-cache
    artifacts_dir: Path = PROJECT_ROOT / "artifacts"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, dotenv: Path | None = None) -> Settings:
        """Read BOOKRAG_*, COHERE_*, QDRANT_* variables; `.env` fills what the environment lacks."""
        env = dict(os.environ if environ is None else environ)
        dotenv = dotenv if dotenv is not None else (Path.cwd() / ".env")
        if environ is None and dotenv.is_file():
            from dotenv import dotenv_values

            for key, value in dotenv_values(dotenv).items():
                if value is not None:
                    env.setdefault(key, value)

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


def book_name(book_dir: Path) -> str:
    """A collection-safe name for a book folder (`docs` folders take their parent's name)."""
    path = Path(book_dir).resolve()
    name = path.parent.name if path.name in ("docs", "doc") else path.name
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "book"
