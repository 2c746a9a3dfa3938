"""The exit codes of every CLI, and the errors a user can act on, each carrying its exit code."""

from enum import IntEnum


class ExitCode(IntEnum):
    """The contract the README's "Exit codes and errors" table spells out; every CLI exits with one of these."""

    OK = 0
    REFUSED = 1  # ask.py: the book does not cover the question
    CONFIG = 2  # configuration or artifact
    RUNTIME = 3  # the store, embedder, LM or disk failed
    ARGS = 4  # bad arguments or input file
    BELOW_GATE = 5  # evaluate.py --min-combined or ask.py --validate not met
    UNEXPECTED = 70  # sysexits' EX_SOFTWARE: a bug in bookrag, not something the user did
    SIGINT = 130  # 128 + the signal's number, as shells report it
    SIGTERM = 143


class BookragError(Exception):
    exit_code = ExitCode.RUNTIME


class ConfigError(BookragError):
    """Missing or invalid settings. Names the variable, never prints a secret."""

    exit_code = ExitCode.CONFIG


class EmbeddingError(BookragError):
    """The embedding model failed (after retries)."""

    exit_code = ExitCode.RUNTIME


class StoreError(BookragError):
    """The vector store cannot be opened or written."""

    exit_code = ExitCode.RUNTIME


class RetrievalError(BookragError):
    """A search could not be run (store unreachable, collection missing, ...)."""

    exit_code = ExitCode.RUNTIME


class AgentError(BookragError):
    """The language model failed after retries."""

    exit_code = ExitCode.RUNTIME


class ArtifactError(BookragError):
    """A compiled program artifact is missing, corrupt, or does not match the index/LM."""

    exit_code = ExitCode.CONFIG


class DatasetError(BookragError):
    """A labeled question file is malformed (names the line and column)."""

    exit_code = ExitCode.ARGS


class BadArgumentError(BookragError):
    """A command-line argument names something unusable (a missing book folder, ...)."""

    exit_code = ExitCode.ARGS
