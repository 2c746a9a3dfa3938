"""The one reader of JSON a user hands over (a manifest, a program's state, a question file's lines and cells, the
marker file of an `--out` folder): Python's reader, whose nesting is bounded by the interpreter's recursion limit.
A document nested deeper raises `NestedTooDeep`, a ValueError like a malformed document's JSONDecodeError, never a
RecursionError, which the CLIs would report as a bug in bookrag (exit 70). No file bookrag writes comes close."""

from __future__ import annotations

import json


class NestedTooDeep(ValueError):
    """A JSON document with arrays or objects nested deeper than Python's reader goes."""


def parse_json(text: str | bytes):
    """`text`'s JSON value; raises JSONDecodeError for malformed JSON and NestedTooDeep for too deep a nesting."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeep("nested too deeply to read") from None
