"""Docusaurus' MDX syntax: `import`/`export` statements, code given as a JSX template literal, text indented under
a JSX tag (no code in MDX), and `:::` admonitions. (JSX tags themselves, inline or spread over lines, go with the
HTML tags in `markup`.)"""

from __future__ import annotations

import re

from retrievers.markdown.fences import fence_state
from retrievers.markdown.markup import block_title
from retrievers.markdown.syntax import Syntax

_MDX_STATEMENT = re.compile(r"^\s*(import|export)\s")
# `:::tip Title` / `:::tip[Title]`; more colons nest one admonition in another (`::::info`)
_ADMONITION = re.compile(r"^\s*:{3,}\s*(\w+)?\s*(.*)$")
# A line that is one JSX tag, `<TabItem value="py">` or `</TabItem>`: group 1 "/" when it closes, group 2 "/" when it
# closes itself
_JSX_TAG_LINE = re.compile(r"^\s*<(/?)[A-Z][\w.]*(?:\s[^<>]*?)?(/?)>\s*$")


def _fence_jsx_code(lines: list[str]) -> list[str]:
    """MDX code given as a JSX template literal (`<CodeBlock>{`...`}</CodeBlock>`) becomes a fenced block, so it
    is kept verbatim like any other code."""
    out: list[str] = []
    literal: list[str] | None = None
    fence = None
    for line in lines:
        if literal is None:
            fence, in_code = fence_state(line, fence)
            if in_code or not line.lstrip().startswith("{`"):
                out.append(line)
                continue
            literal, line = [], line.lstrip()[2:]
        closes = line.rstrip().endswith("`}")
        literal.append(line.rstrip()[:-2] if closes else line)
        if closes:
            out += _fenced(literal)
            literal = None
    return out + (_fenced(literal) if literal is not None else [])


def _dedent_jsx_children(lines: list[str]) -> list[str]:
    """MDX has no indented code: the text indented under a JSX tag (`<TabItem>`'s, four spaces in) is the page's
    prose, dedented so that it does not read as code."""
    out: list[str] = []
    depth, fence = 0, None
    for line in lines:
        fence, in_code = fence_state(line, fence)
        tag = None if in_code else _JSX_TAG_LINE.match(line)
        if tag and not tag.group(2):
            depth = max(0, depth - 1 if tag.group(1) else depth + 1)
        out.append(line.lstrip() if depth and not in_code and not tag else line)
    return out


def _fenced(code: list[str]) -> list[str]:
    """Code lines between fences longer than any backtick run that starts one of them."""
    runs = [len(m.group(1)) for m in (re.match(r"\s*(`+)", line) for line in code) if m]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [fence, *code, fence]


def _mdx_statement(line: str) -> list[str] | None:
    """An MDX `import`/`export` line is code for the site's build: it goes."""
    return [] if _MDX_STATEMENT.match(line) else None


def _admonition(line: str) -> list[str] | None:
    """`:::tip Custom title` and `:::tip[Custom title]` keep their title; a closing `:::` is a paragraph break."""
    admonition = _ADMONITION.match(line)
    return block_title(re.sub(r"^\[(.*)\]$", r"\1", admonition.group(2).strip())) if admonition else None


SYNTAX = Syntax(
    name="Docusaurus",
    code_passes=(_fence_jsx_code, _dedent_jsx_children),
    markers=(_mdx_statement, _admonition),
)
