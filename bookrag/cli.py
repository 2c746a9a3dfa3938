"""What every command-line entry point shares: argument errors exit 4, known errors map to their exit code,
anything unexpected exits 70 in one line, logging goes to stderr (scrubbed of secrets), stdout stays clean for
--json. Every CLI imports this module first."""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
from pathlib import Path

from bookrag.config import AnswerMode, ConfigError, Settings, variable_for
from bookrag.errors import BookragError, ExitCode
from bookrag.redaction import scrub
from bookrag.terminal_text import printable, undecodable

# Before anything imports dspy (and with it LiteLLM; this module's imports do not): price models from LiteLLM's
# bundled table instead of downloading it, which stalls an offline run for ~7 s. A value the user set wins.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# DSPy's optimizers and Evaluate draw tqdm bars on stderr: on a terminal they show progress; in a log, noise.
if not sys.stderr.isatty():
    os.environ.setdefault("TQDM_DISABLE", "1")

log = logging.getLogger("bookrag")


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument exits with 4 (argparse's own default is 2, our configuration error); with the
    options every program command shares (`add_program_arguments`)."""

    def add_program_arguments(self, *, json_help: str, verbose_help: str = "debug logging on stderr") -> None:
        """--book, --lm, --answer-mode, --json and --verbose, as ask.py, evaluate.py and optimize.py share them."""
        self.add_argument("--book", type=user_path, help="book folder (default: BOOKRAG_BOOK, the bundled book)")
        self.add_argument("--lm", help="language model: local, or a LiteLLM string like openai/gpt-4o-mini")
        self.add_argument("--answer-mode", choices=list(AnswerMode),
                          help="generated (the LM writes the answer) or extractive (the book's own sentences, fast; "
                               "no LM call) (default: BOOKRAG_ANSWER_MODE, generated)")
        self.add_argument("--json", action="store_true", help=json_help)
        self.add_argument("--verbose", "-v", action="store_true", help=verbose_help)

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(ExitCode.ARGS, f"{self.prog}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        """Also rejects text arguments that are not valid UTF-8 (paths may be any bytes: they stay Paths)."""
        parsed = super().parse_args(args, namespace)
        book = getattr(parsed, "book", None)
        if book is not None and not book.is_dir():
            self.error(f"--book {book} is not a folder")
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and (shown := undecodable(text)) is not None:
                    name = "/".join(action.option_strings) or action.dest
                    self.error(f"argument {name} is not valid UTF-8 text: {shown!r}; retype it, or set the "
                               "terminal to UTF-8 (LANG / LC_ALL)")
        return parsed


def user_path(text: str) -> Path:
    """An argparse `type` for a path flag: `~` is the user's home, as the shell would have made it had it not been
    quoted (`--out '~/x'`, `--out=~/x`)."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # `~name` of no user here
        raise argparse.ArgumentTypeError(f"{text!r}: no user's home folder is named so; write ./{text} for a "
                                         "folder of that name") from None


def setting_type(field: str):
    """An argparse `type` for a flag that sets the Settings field `field`: parsed and checked as its environment
    variable is (`Variable.problem`), so a bad value exits 4 naming the flag, before anything runs."""
    variable = variable_for(field)

    def parse(raw: str):
        try:
            value = variable.parse(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {variable.kind}, got {raw!r}") from None
        if problem := variable.problem(value):
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = variable.kind or field  # argparse names the type in its own "invalid ... value" message
    return parse


class ScrubbingFormatter(logging.Formatter):
    """Log lines (tracebacks included) without secrets: libraries log URLs and error bodies as they are; and
    without control characters: a warning may quote a page's file name or front matter."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record))


def setup_logging(verbose: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ScrubbingFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler])
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def load_settings(**overrides) -> Settings:
    """The environment (with `.env` exported into it, see `Settings.from_env`), then the CLI's flags."""
    return Settings.from_env().replace(**overrides)


def run(main) -> None:
    """Call `main()` -> exit code; the one handler of every CLI. A BookragError prints one clear line and exits
    with its code; anything else is a bug: one line, exit 70, and the traceback with --verbose only. A reader that
    stopped reading (`ask.py ... | head -1`) ends the run quietly with 0, as Unix tools do."""
    try:
        code = main()
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BookragError as exc:
        error_line(str(exc))
        code = exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = ExitCode.SIGINT
    except Exception as exc:  # the last line of defence: no raw traceback, no secret
        if isinstance(exc, BrokenPipeError) and _reader_gone():
            code = _stdout_closed()
        else:
            error_line(f"unexpected {type(exc).__name__}: {exc} (a bug in bookrag; --verbose shows the traceback)")
            log.debug("traceback of the unexpected error", exc_info=exc)
            code = ExitCode.UNEXPECTED
    sys.exit(code or 0)


def notice(message: str) -> None:
    """A line for the user on stderr, at once (stdout may be --json); `shown`: it may name a book's file."""
    print(shown(message), file=sys.stderr, flush=True)


def error_line(message: str) -> None:
    """`error: <message>` on stderr; `shown`: it may quote a book, a server or a question."""
    print(f"error: {shown(message)}", file=sys.stderr)


def shown(message: str) -> str:
    """A message, notice or log line as stderr gets it: without secrets, and without control characters (escape
    sequences, bidirectional controls) it may quote from a book, a server or a question."""
    return printable(scrub(message))


def _reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more (poll reports an error on it): the broken pipe was ours to
    print to, not a connection the run needed."""
    try:
        stdout = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (replaced, closed): not the pipe in question
        return False
    poller = select.poll()
    poller.register(stdout, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _stdout_closed() -> int:
    """The Python docs' recipe (library/signal, "Note on SIGPIPE"): stdout goes to /dev/null, so the interpreter's
    last flush of what is still buffered raises nothing more."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return ExitCode.OK


__all__ = ["ArgumentParser", "ConfigError", "error_line", "load_settings", "notice", "run", "setup_logging"]
