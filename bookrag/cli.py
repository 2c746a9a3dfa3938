"""What every command-line entry point shares: argument errors exit 4, known errors map to their exit code,
logging goes to stderr, stdout stays clean for --json. Every CLI imports this module first."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from bookrag.config import ConfigError, Settings
from bookrag.errors import BookragError

# Before anything imports dspy (and with it LiteLLM; this module's imports do not): price models from LiteLLM's
# bundled table instead of downloading it, which stalls an offline run for ~7 s. A value the user set wins.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

EXIT_OK, EXIT_REFUSED, EXIT_CONFIG, EXIT_RUNTIME, EXIT_ARGS, EXIT_BELOW_GATE = 0, 1, 2, 3, 4, 5


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument exits with 4 (argparse's own default is 2, our configuration error)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_ARGS, f"{self.prog}: error: {message}\n")


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "urllib3", "sentence_transformers", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def load_settings(**overrides) -> Settings:
    """The environment (with `.env` exported into it, see `Settings.from_env`), then the CLI's flags."""
    return Settings.from_env().replace(**overrides)


def run(main) -> None:
    """Call `main()` -> exit code; a BookragError prints one clear line and exits with its code."""
    try:
        code = main()
    except BookragError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    sys.exit(code or 0)


__all__ = ["ArgumentParser", "ConfigError", "load_settings", "run", "setup_logging"]
