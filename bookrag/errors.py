"""The errors a user can act on. Each carries the exit code the CLIs use for it."""


class BookragError(Exception):
    exit_code = 1


class ConfigError(BookragError):
    """Missing or invalid settings. Names the variable, never prints a secret."""

    exit_code = 2


class EmbeddingError(BookragError):
    """The embedding model failed (after retries)."""

    exit_code = 3


class StoreError(BookragError):
    """The vector store cannot be opened or written."""

    exit_code = 3


class RetrievalError(BookragError):
    """A search could not be run (store unreachable, collection missing, ...)."""

    exit_code = 3


class AgentError(BookragError):
    """The language model failed after retries."""

    exit_code = 3


class ArtifactError(BookragError):
    """A compiled program artifact is missing, corrupt, or does not match the index/LM."""

    exit_code = 2


class DatasetError(BookragError):
    """A labeled question file is malformed (names the line and column)."""

    exit_code = 4


class BadArgumentError(BookragError):
    """A command-line argument names something unusable (a missing book folder, ...)."""

    exit_code = 4
