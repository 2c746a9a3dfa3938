"""Hard-wrapped prose rejoined: one line per paragraph, list item and quoted paragraph."""

from __future__ import annotations

import re
import unicodedata

from retrievers.markdown.fences import QUOTE_MARKERS, with_quoted_code_state
from retrievers.markdown.headings import HEADING

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_BOLD_LABEL = re.compile(r"^\s*\*\*[^*]+(?::\*\*|\*\*:)")  # "**Issue**: ..." or "**Note:** ..."
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")
_RULE_OR_UNDERLINE = re.compile(r"^\s{0,3}(?:=+|-+|(?:[-*_]\s*){3,})\s*$")


def join_wrapped_lines(text: str) -> str:
    """Hard-wrapped Markdown prose rejoined: each paragraph, list item and quoted paragraph on one line.

    A line continues the one before with a space unless a blank line comes between, or it starts a list item,
    a heading, a fence, a table, an HTML block, a rule or a change of blockquote depth; a list item's indented
    lines continue it. A line ending in a hard break (two spaces or a backslash) ends its line. Code blocks
    (fenced or indented) and tables stay byte for byte.
    """
    lines = text.split("\n")
    out: list[str] = []
    open_depth: int | None = None  # the blockquote depth of the last line out, while the next line may continue it
    in_list = in_table = False
    for number, (line, (content, in_code)) in enumerate(zip(lines, with_quoted_code_state(lines))):
        markers = QUOTE_MARKERS.match(line)
        depth = markers.group(0).count(">") if markers else 0
        indent = len(content) - len(content.lstrip())
        in_table = not in_code and bool(content.strip()) and (in_table or bool(_TABLE_DELIMITER.match(content)))
        is_table_header = number + 1 < len(lines) and bool(_TABLE_DELIMITER.match(lines[number + 1]))
        indented_code = open_depth is None and not in_list and indent >= 4
        if in_code or in_table or is_table_header or indented_code or not content.strip():
            out.append(line if in_code or content.strip() else line.rstrip())  # code keeps even its blanks
            open_depth = None
            continue
        if _LIST_ITEM.match(content):
            in_list = True
        elif HEADING.match(content) or (indent == 0 and out and not out[-1].strip()):
            in_list = False  # a heading, or a paragraph after a blank line, ends the list
        if open_depth == depth and not (_starts_item(content) or _stands_alone(content)):
            out[-1] = f"{out[-1]} {content.strip()}"
        else:
            out.append(line.rstrip())
        hard_break = line.endswith(("  ", "\\"))
        if hard_break:
            out[-1] = out[-1].rstrip().removesuffix("\\").rstrip()
        open_depth = None if hard_break or _stands_alone(content) else depth
    return "\n".join(out)


def _starts_item(content: str) -> bool:
    """A list item, or a line books write as one without a marker: a bold label (`**Issue**: ...`) or a leading
    symbol (✅, ❌, →, •). Such lines start a line of their own but may be continued."""
    first = content.lstrip()[:1]
    symbol = bool(first) and (unicodedata.category(first) in ("So", "Sm") or first == "•")
    return symbol or bool(_LIST_ITEM.match(content) or _BOLD_LABEL.match(content))


def _stands_alone(content: str) -> bool:
    """Lines that neither continue a paragraph nor are continued: headings, tables, HTML blocks and rules."""
    stripped = content.lstrip()
    return bool(HEADING.match(content) or stripped.startswith(("|", "<")) or _RULE_OR_UNDERLINE.match(content))
