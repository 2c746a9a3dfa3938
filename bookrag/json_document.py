"""The one reader of JSON a user hands over (a manifest, a report, a program's state, a question file's lines and
cells, the marker file of an `--out` folder): Python's reader, whose nesting is bounded by the interpreter's
recursion limit. A document nested deeper raises `NestedTooDeep`, a ValueError like a malformed document's
JSONDecodeError, never a RecursionError, which the CLIs would report as a bug in bookrag (exit 70). No file bookrag
writes comes close.

A JSON file is read by `read_json_file`, which reads only a regular file, and at most MAX_JSON_FILE_BYTES of it: a
FIFO would block the reader forever and a link to /dev/zero fill its memory."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

# The largest JSON file read: above any bookrag writes (a report.json holds a row per question and program: ~2 KB
# each), far below what fills a machine's memory.
MAX_JSON_FILE_BYTES = 64 * 2**20
_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a device",
          stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}


class UnreadableJSON(ValueError):
    """A JSON file that is not one to read; the message completes "<path> ..." with why (the caller adds the fix)."""


class NestedTooDeep(UnreadableJSON):
    """A JSON document with arrays or objects nested deeper than Python's reader goes."""


class DuplicateKey(UnreadableJSON):
    """A JSON object that gives one key twice: Python's reader keeps the last value, silently."""


def parse_json(text: str | bytes, unique_keys: bool = False):
    """`text`'s JSON value; raises JSONDecodeError for malformed JSON, NestedTooDeep for too deep a nesting and, with
    `unique_keys`, DuplicateKey for an object that gives a key twice."""
    try:
        return json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except RecursionError:
        raise NestedTooDeep("is nested too deeply to read") from None


def given_twice(names: list[str]) -> list[str]:
    """The names that `names` gives more than once, sorted (a JSON object's keys, a CSV header's columns)."""
    return sorted({name for name in names if names.count(name) > 1})


def _unique(pairs: list[tuple[str, object]]) -> dict:
    if twice := given_twice([key for key, _ in pairs]):
        raise DuplicateKey(f"gives the key {', '.join(map(repr, twice))} twice")
    return dict(pairs)


def read_json_file(path: Path):
    """The JSON value of the UTF-8 file at `path` (a symbolic link is followed). Raises FileNotFoundError for no
    file, JSONDecodeError for malformed JSON, and UnreadableJSON for the rest: not a regular file, larger than
    MAX_JSON_FILE_BYTES, not UTF-8, nested too deeply, or an error of the system's."""
    try:  # O_NONBLOCK: opening a FIFO that no one writes returns at once, and its kind is refused below
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableJSON(f"cannot be read ({exc.strerror})") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise UnreadableJSON(f"is {_KINDS.get(stat.S_IFMT(mode), 'not a file')}, not a regular file")
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(MAX_JSON_FILE_BYTES + 1)
    if len(data) > MAX_JSON_FILE_BYTES:
        raise UnreadableJSON(f"is larger than the {MAX_JSON_FILE_BYTES // 2**20} MB a JSON file of bookrag's may be")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableJSON(f"is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None
    return parse_json(text)
