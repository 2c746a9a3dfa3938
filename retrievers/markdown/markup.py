"""HTML and JSX markup in prose: comments and tags go (their inner text stays); terminal captures lose their HTML
colouring. The site generators' block markers (`:::`, `///`, MDX `import`) are tried on each prose line here."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from retrievers.markdown.fences import FENCE, fence_state
from retrievers.markdown.headings import HEADING
from retrievers.markdown.inline import outside_code_spans
from retrievers.markdown.syntax import Marker

TERMINAL_LANGUAGES = frozenset({"console", "shell", "shell-session", "bash", "sh", "zsh"})
# The HTML tags pages use for layout and inline emphasis; tags named otherwise (<robot>, <package_name>) are content.
_HTML_NAMES = (
    "details|summary|div|span|br|center|p|img|a|sup|sub|font|b|strong|i|em|u|s|small|mark|kbd|abbr|dfn|code"
    "|table|thead|tbody|tr|th|td|hr|figure|figcaption"
)
# Capitalized JSX components (<Tabs>, </TabItem>, <Foo />) and those HTML tags; a prop may hold a {...} expression.
_JSX_TAG = re.compile(r"</?(?:[A-Z][\w.]*|" + _HTML_NAMES + r")(?:\s(?:[^<>{}]|\{[^{}]*\})*)?/?>")
_HTML_TAG = re.compile(r"</?(?:" + _HTML_NAMES + r")(?:\s[^<>]*)?/?>")
_TITLED_TERM = re.compile(r"<(abbr|dfn)\s+title=([\"'])(.*?)\2\s*>(.*?)</\1>")
_HTML_CODE = re.compile(r"</?code>")
_WORD_BREAK_TAG = re.compile(r"</(?:t[dh]|summary|p|div|li)>|<br\s*/?>")  # removed, they would glue two words
_JSX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_HTML_COMMENT = re.compile(r"<!--.*?-->")
_JSX_OPEN = re.compile(r"^\s*<[A-Z][\w.]*(\s|$)")
_STRING_LITERAL = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def drop_html_comments(lines: list[str]) -> list[str]:
    """`<!-- ... -->` outside code, on one line or many."""
    out: list[str] = []
    fence, in_comment = None, False
    for line in lines:
        if in_comment:
            if "-->" not in line:
                continue
            line, in_comment = line.split("-->", 1)[1], False
        else:
            fence, in_code = fence_state(line, fence)
            if in_code:
                out.append(line)
                continue
        kept = _HTML_COMMENT.sub("", line)
        if "<!--" in kept:
            kept, in_comment = kept.split("<!--", 1)[0], True
        out.append(kept if kept.strip() else "")
    return out


def clean_markup(lines: list[str], markers: Sequence[Marker]) -> list[str]:
    """Drop JSX/HTML tags (keeping inner text) and the lines `markers` claim (the first that claims a line gives
    what it becomes); code stays verbatim.

    A JSX tag spread over many lines (props holding data, as in `<HardwareTable rows={[...]} />`) keeps the
    prose of its string props, one line for the tag. A line that held only markup becomes a blank line: the
    tags around a block (`</TabItem>`) separate it from the next. Terminal captures (console/shell fences)
    lose their HTML colouring tags; other code blocks keep theirs.
    """
    out, fence, tag, terminal = [], None, None, False
    for line in lines:
        opening = fence is None
        fence, in_code = fence_state(line, fence)
        if tag is not None:
            tag.append(line)
            if _tag_closed("\n".join(tag)):
                out.append(_prose_props("\n".join(tag)))
                tag = None
            continue
        if in_code:
            if opening:
                terminal = FENCE.match(line).group(2).lower() in TERMINAL_LANGUAGES
            out.append(_terminal_text(line) if terminal else line)
            continue
        if _JSX_OPEN.match(line) and not _tag_closed(line):
            tag = [line]
            continue
        claimed = _claimed(line, markers)
        if claimed is not None:
            out += claimed
            continue
        cleaned = _prose_text(line, in_heading=bool(HEADING.match(line)))
        out.append(line if cleaned == line else cleaned.rstrip())  # untouched lines keep a hard break ("  ")
    return out


def _claimed(line: str, markers: Sequence[Marker]) -> list[str] | None:
    """What the first marker that claims the line makes of it; None when none does."""
    for marker in markers:
        replacement = marker(line)
        if replacement is not None:
            return replacement
    return None


def block_title(title: str | None) -> list[str]:
    """An admonition marker becomes a paragraph break, and its custom title a bold line of its own."""
    return [f"**{title.strip()}**", ""] if title and title.strip() else [""]


def _prose_text(line: str, in_heading: bool) -> str:
    """A prose line without tags: `<abbr>`/`<dfn>` keep their title in parentheses (not in a heading); then,
    outside inline code spans, `<code>` becomes backticks, a cell or line break a space, and other tags go."""
    line = _TITLED_TERM.sub(r"\4" if in_heading else r"\4 (\3)", line)
    return outside_code_spans(
        line, lambda text: _JSX_TAG.sub("", _WORD_BREAK_TAG.sub(" ", _HTML_CODE.sub("`", _JSX_COMMENT.sub("", text))))
    )


def _terminal_text(line: str) -> str:
    """A terminal capture line rendered as HTML (`<font color=...>`, `<span style=...>`): the text the terminal
    shows. A line that carried such tags is HTML, so its entities (`&apos;`) are decoded too."""
    plain = _HTML_TAG.sub("", line)
    return html.unescape(plain) if plain != line else line


def _prose_props(tag: str) -> str:
    """The string props of a JSX tag that read as prose (contain a space), joined; ids and enums are dropped."""
    literals = (m.group(1) if m.group(1) is not None else m.group(2) for m in _STRING_LITERAL.finditer(tag))
    return "; ".join(v for v in literals if " " in v.strip())


def _tag_closed(text: str) -> bool:
    """Whether an opening JSX tag is complete: a `>` outside any `{...}` prop expression."""
    depth = 0
    for char in text:
        depth += char == "{"
        depth -= char == "}"
        if char == ">" and depth == 0:
            return True
    return False
