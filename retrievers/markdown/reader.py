"""Read one page of a Markdown book (Docusaurus, MkDocs or mdBook sources) into a `Page` of heading-delimited sections.

Cleans what a reader never sees and keeps what they read. Dropped: front matter, MDX imports/exports, JSX and
layout HTML tags (their inner text stays), HTML comments, admonition markers (`:::`, `///`, `!!!`/`???`, and
MkDocs Material's `===` content tabs, whose indented bodies are dedented), heading attribute lists (`{ #id }`: the id
becomes the section anchor), Jekyll/Liquid and GitBook template tags (`{% raw %}`, `{% hint %}`), link definitions
and footnote marks (a reference link reads as its text, a footnote's note stays), the lines mdBook hides in Rust
code blocks, and include directives: mdBook's `{{#include}}` family is resolved when its file lies inside the book
folder, MkDocs' `{* file *}` and `--8<--` (which resolve against the site's project root) are dropped. HTML markup
in terminal captures (console/shell fences) is reduced to the text the terminal shows; other fenced code blocks
(but for those hidden Rust lines) and tables are kept verbatim. Hard-wrapped prose is joined into one line per
paragraph.

Page titles come from front matter, the first H1, the book's table of contents (mdBook `SUMMARY.md`, MkDocs
`nav`), the first heading of any level, or, last, the file name.
"""

from __future__ import annotations

import html
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote

import yaml

log = logging.getLogger(__package__)  # "retrievers.markdown", the name its log lines have always carried
MARKDOWN_SUFFIXES = (".md", ".mdx")
ROOT_MODULE = "general"
SUMMARY_FILE = "SUMMARY.md"  # mdBook's table of contents, at the book root: it titles pages and is not one
MKDOCS_CONFIGS = ("mkdocs.yml", "mkdocs.yaml")
TERMINAL_LANGUAGES = frozenset({"console", "shell", "shell-session", "bash", "sh", "zsh"})
MAX_INCLUDE_DEPTH = 10  # mdBook's own limit on includes within included files
# A page's front matter holds a title, a slug, tags: a few hundred characters. Beyond this bound, either as written
# or as its YAML aliases expand it (a 1.2 KB alias bomb expands to hundreds of MB), the page is refused.
FRONT_MATTER_MAX_CHARS = 64 * 1024
MKDOCS_CONFIG_MAX_CHARS = 1024 * 1024  # the same bound for mkdocs.yml, read for its nav: large sites' run ~100 KB

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*\{?\.?([\w+-]*)")  # any indent: fences nest in list items; group 2: language
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")  # a closing #-run needs a space: "C#" stays
_MDX_STATEMENT = re.compile(r"^\s*(import|export)\s")
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
_CODE_SPAN = re.compile(r"(`+).+?\1")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS_UNDERSCORES = re.compile(r"(?<!\w)_+|_+(?!\w)")  # `snake_case` keeps its underscore, `_word_` loses both
# Docusaurus `:::tip Title` / `:::tip[Title]`; more colons nest one admonition in another (`::::info`)
_ADMONITION = re.compile(r"^\s*:{3,}\s*(\w+)?\s*(.*)$")
# Jekyll/Liquid tags on a line of their own (`{% raw %}` around code, `{% include note.html %}`): template syntax
_LIQUID_LINE = re.compile(r"^[ \t]*\{%-?\s*\w+.*?-?%\}[ \t]*$")
_LIQUID_RAW = re.compile(r"\{%-?\s*(?:end)?raw\s*-?%\}")
_BLOCK_MARKER = re.compile(r"^\s*/{3,}[ \t]*[\w-]*[ \t]*(?:\|[ \t]*(.*?))?[ \t]*$")  # MkDocs `/// note | Title`, `///`
# MkDocs `!!! note "Title"`, `???+ tip`, and Material's content tabs `=== "Ubuntu"` (`===!`, `===+`)
_INDENTED_ADMONITION = re.compile(
    r'^([ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+[\w-]+)*|===[!+]?)(?:[ \t]+"(.*)")?[ \t]*$')
# Reference-style links and footnotes (CommonMark, mdBook, MkDocs): `[text][label]`, `[text][]`, a shortcut `[label]`
# with a definition `[label]: url "title"`, a footnote mark `[^1]` and its note `[^1]: text`
_REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[(?!\^)([^\]]+)\]:[ \t]*<?\S+>?(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?[ \t]*$")
_REFERENCE_LINK = re.compile(r"\[([^\]]+)\]\[([^\]]*)\]")
_SHORTCUT_LINK = re.compile(r"(?<![\]!])\[([^\]^]+)\](?![\[(:])")
_FOOTNOTE_NOTE = re.compile(r"^ {0,3}\[\^([^\]]+)\]:[ \t]*")
_FOOTNOTE_MARK = re.compile(r"[ \t]*\[\^([^\]]+)\]")
_ATTRIBUTE = r"(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
_ATTRIBUTE_LIST = re.compile(r"\s*\{:?\s*(" + _ATTRIBUTE + r"(?:\s+" + _ATTRIBUTE + r")*)\s*\}\s*$")
_EXPLICIT_ID = re.compile(r"(?:^|\s)#([\w:.-]+)")
_MDBOOK_DIRECTIVE = re.compile(r"(\\)?\{\{\s*#(\w+)\s*(.*?)\s*\}\}")
_MDBOOK_ANCHOR_LINE = re.compile(r"ANCHOR(?:_END)?:\s*[\w-]+")
_LINE_RANGE = re.compile(r"(\d*)(?::(\d*))?")
_MKDOCS_INCLUDE = re.compile(r"^[ \t]*\{\*.*\*\}[ \t]*$", re.MULTILINE)
_SNIPPET_BLOCK = re.compile(r"^[ \t]*-{2,}8<-{2,}[ \t]*\n(?:.*\n)*?[ \t]*-{2,}8<-{2,}[ \t]*$", re.MULTILINE)
_SNIPPET_LINE = re.compile(r"^[ \t]*-{2,}8<-{2,}.*$", re.MULTILINE)
_SUMMARY_ENTRY = re.compile(r"^\s*(?:[-*+]\s+)?\[(.+)\]\(<?([^()<>]*?)>?\)\s*$")
_QUOTE_MARKERS = re.compile(r"^ {0,3}(?:>[ ]?)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_BOLD_LABEL = re.compile(r"^\s*\*\*[^*]+(?::\*\*|\*\*:)")  # "**Issue**: ..." or "**Note:** ..."
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")
_RULE_OR_UNDERLINE = re.compile(r"^\s{0,3}(?:=+|-+|(?:[-*_]\s*){3,})\s*$")
_NUMBER_PREFIX = re.compile(r"^\d+[-_.]")


class BookFileError(Exception):
    """One page could not be read; the ingest reports it and goes on with the others."""

    def __init__(self, source: str, reason: str):
        super().__init__(f"{source}: {reason}")
        self.source, self.reason = source, reason


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    anchor: str
    text: str


@dataclass(frozen=True)
class Page:
    source: str  # path relative to the book folder, POSIX style
    title: str
    module: str
    url: str
    sections: tuple[Section, ...]


def find_pages(book_dir: Path) -> list[Path]:
    """Every .md/.mdx file under the book folder, in a stable order (hidden folders and node_modules skipped).

    A symlink whose target lies outside the book folder is skipped with a warning: the index, and the answers
    quoting it, must hold only the book. The root SUMMARY.md is mdBook's table of contents, not a page.
    """
    root = Path(book_dir).resolve()
    found = []
    for path in sorted(Path(book_dir).rglob("*")):
        rel = path.relative_to(book_dir).parts
        if any(p.startswith(".") or p == "node_modules" for p in rel) or rel == (SUMMARY_FILE,):
            continue
        if path.suffix.lower() in MARKDOWN_SUFFIXES and path.is_file():
            if not path.resolve().is_relative_to(root):
                log.warning("skipped %s: it links to %s, outside the book folder", "/".join(rel), path.resolve())
                continue
            found.append(path)
    return found


def parse_page(path: Path, book_dir: Path, base_url: str = "/docs", toc: Mapping[str, str] | None = None) -> Page:
    """`toc` maps sources to the titles the book's table of contents gives them (see `toc_titles`)."""
    source = PurePosixPath(Path(path).relative_to(book_dir)).as_posix()
    try:
        raw = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BookFileError(source, f"not UTF-8 text (byte {exc.start}); re-save the file as UTF-8") from None
    except OSError as exc:
        raise BookFileError(source, f"cannot be read ({exc.strerror})") from None
    front, body = split_front_matter(raw, source)
    lines = readable_lines(body, Path(path).parent, Path(book_dir).resolve())
    title = page_title(front, lines, (toc or {}).get(source), source)
    module = str(front.get("module") or _module_of(source))
    return Page(
        source=source,
        title=title,
        module=module,
        url=page_url(source, front.get("slug"), base_url),
        sections=tuple(split_sections(lines, title)),
    )


def readable_lines(body: str, page_dir: Path, book_root: Path) -> list[str]:
    """A page's Markdown body as its reader sees it, line by line: each step removes one kind of markup."""
    body = _expand_mdbook_directives(body, page_dir, book_root)
    body = _drop_mkdocs_includes(body)
    lines = _drop_hidden_rust_lines(body.splitlines())
    lines = _drop_liquid_tags(lines)
    lines = _unindent_admonitions(lines)
    lines = _resolve_references(lines)
    lines = _fence_jsx_code(lines)
    lines = _drop_html_comments(lines)
    lines = clean_mdx(lines)
    lines = _drop_empty_code_blocks(lines)
    return join_wrapped_lines("\n".join(lines)).split("\n")


def page_title(front: dict, lines: list[str], toc_title: str | None, source: str) -> str:
    """Front matter, else the first H1, else the table of contents, else the first heading, else the file name."""
    headings = [m for m in map(_HEADING.match, _outside_fences(lines)) if m]
    first_h1 = next((_heading(m.group(2))[0] for m in headings if len(m.group(1)) == 1), None)
    first_heading = _heading(headings[0].group(2))[0] if headings else None
    chosen = front.get("title") or front.get("sidebar_label") or first_h1 or toc_title or first_heading
    return str(chosen or _humanize(PurePosixPath(source).stem))


def split_front_matter(raw: str, source: str) -> tuple[dict, str]:
    """YAML front matter between `---` lines at the top; a broken or oversized block is an error naming the file."""
    if not raw.startswith("---"):
        return {}, raw
    lines = raw.split("\n")
    if lines[0].strip() != "---":
        return {}, raw
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            front = _parse_front_matter("\n".join(lines[1:end]), source)
            return front, "\n".join(lines[end + 1 :])
    raise BookFileError(source, "front matter opened with --- is never closed")


def _parse_front_matter(block: str, source: str) -> dict:
    if len(block) > FRONT_MATTER_MAX_CHARS:
        raise BookFileError(source, f"front matter of {len(block):,} characters, over the {FRONT_MATTER_MAX_CHARS:,} "
                                    "allowed: shorten the --- block")
    try:
        front = _load_bounded_yaml(block, yaml.SafeLoader, FRONT_MATTER_MAX_CHARS) or {}
    except _YamlRefused as exc:
        raise BookFileError(source, f"front matter {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark else ""
        raise BookFileError(source, f"broken YAML front matter{where}: fix or remove the --- block") from None
    if not isinstance(front, dict):
        raise BookFileError(source, "front matter is not a mapping of `key: value` lines")
    return front


class _YamlRefused(yaml.YAMLError):
    """A YAML document refused before it is built: its message says why and what to do."""


def _load_bounded_yaml(text: str, loader: type[yaml.SafeLoader], max_chars: int) -> object:
    """`yaml.load`, refusing a document whose nodes, each alias counted as a copy of what it names, hold more than
    `max_chars` characters: the parsed objects share what aliases name, but reading them (str(), iterating) expands
    it. The count stops at the bound, so a bomb costs no more than a document at the bound."""
    reader = loader(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, max_chars)
        return reader.construct_document(node)
    except RecursionError:  # PyYAML composes nested collections recursively: 40 KB of `[` is enough
        raise _YamlRefused("nests deeper than Python can read: flatten it") from None
    finally:
        reader.dispose()


def _check_expanded_size(root: yaml.Node, max_chars: int) -> None:
    size, pending = 0, [root]
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.ScalarNode):
            size += len(node.value) + 1
        elif isinstance(node, yaml.SequenceNode):
            size += 1
            pending.extend(node.value)
        else:
            size += 1
            pending.extend(item for pair in node.value for item in pair)
        if size > max_chars:
            raise _YamlRefused(f"expands past {max_chars:,} characters through its YAML aliases (*name), as an "
                               "alias bomb does: remove the aliases")


# -- includes ---------------------------------------------------------------------------------------------------


def _expand_mdbook_directives(text: str, page_dir: Path, book_root: Path, depth: int = 0) -> str:
    """mdBook's `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}` replaced by the file they name when
    it lies inside the book folder (paths are relative to the page; line ranges and anchors honoured); any other
    `{{#...}}` directive, or one naming a file outside the book, is dropped. `\\{{#...}}` is literal text."""

    def replace(directive: re.Match) -> str:
        escaped, name, args = directive.groups()
        if escaped:
            return directive.group(0)[1:]
        if name not in ("include", "rustdoc_include", "playground") or not args or depth >= MAX_INCLUDE_DEPTH:
            return ""
        target, _, selector = args.split()[0].partition(":")
        included = _read_inside_book(page_dir / target, book_root)
        if included is None:
            log.debug("dropped {{#%s %s}}: no such file inside the book folder", name, args)
            return ""
        included = _expand_mdbook_directives(
            _select_lines(included, selector), (page_dir / target).parent, book_root, depth + 1
        )
        return f"```rust\n{included}\n```" if name == "playground" else included

    return _MDBOOK_DIRECTIVE.sub(replace, text)


def _read_inside_book(path: Path, book_root: Path) -> str | None:
    """A file's text when it (links followed) lies inside the book folder; None when outside, missing or not UTF-8."""
    resolved = path.resolve()
    if not resolved.is_relative_to(book_root) or not resolved.is_file():
        return None
    try:
        return resolved.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _select_lines(text: str, selector: str) -> str:
    """mdBook's part of a file: `2` (one line), `2:10`, `2:`, `:10` (1-based, inclusive) or an anchor name.

    Lines holding `ANCHOR:`/`ANCHOR_END:` markers never show, as in mdBook.
    """
    lines = text.rstrip("\n").split("\n")
    numbers = _LINE_RANGE.fullmatch(selector)
    if not selector:
        chosen = lines
    elif numbers:
        start, end = numbers.groups()
        first = int(start) - 1 if start else 0
        last = first + 1 if end is None else int(end) if end else len(lines)
        chosen = lines[max(first, 0) : last]
    else:
        chosen = _anchored_lines(lines, selector)
    return "\n".join(line for line in chosen if not _MDBOOK_ANCHOR_LINE.search(line))


def _anchored_lines(lines: list[str], anchor: str) -> list[str]:
    """The lines between `ANCHOR: name` and `ANCHOR_END: name` (markers may sit in any kind of comment)."""
    name = re.escape(anchor) + r"(?![\w-])"
    start, end = re.compile(r"ANCHOR:\s*" + name), re.compile(r"ANCHOR_END:\s*" + name)
    chosen: list[str] | None = None
    for line in lines:
        if chosen is None:
            chosen = [] if start.search(line) else None
        elif end.search(line):
            break
        else:
            chosen.append(line)
    return chosen or []


def _drop_mkdocs_includes(text: str) -> str:
    """MkDocs' `{* file *}` macros and `--8<--` snippets name files relative to the site's project root, which a
    docs/ folder does not hold: their lines go rather than show as syntax."""
    return _SNIPPET_LINE.sub("", _SNIPPET_BLOCK.sub("", _MKDOCS_INCLUDE.sub("", text)))


def _drop_hidden_rust_lines(lines: list[str]) -> list[str]:
    """mdBook hides a Rust code block's `# `-prefixed lines (the `fn main() {` around an example) from its reader;
    they go here too. `##` stands for a `#` the reader sees; `#[derive]` and `#![allow]` are attributes, shown."""
    out: list[str] = []
    fence, rust = None, False
    for line in lines:
        opening = fence is None
        fence, in_code = _fence_state(line, fence)
        if in_code and opening:
            rust = _FENCE.match(line).group(2).lower() == "rust"
        elif in_code and rust and fence is not None:
            code = line.lstrip()
            if code == "#" or code.startswith("# "):
                continue
            if code.startswith("##"):
                line = line.replace("##", "#", 1)
        out.append(line)
    return out


def _drop_liquid_tags(lines: list[str]) -> list[str]:
    """Jekyll/Liquid and GitBook template tags: `{% raw %}`/`{% endraw %}` wherever they are (the template engine
    strips them before Markdown is read, code blocks included), and any other tag on a line of its own outside
    code (`{% include note.html %}`, `{% hint style="info" %}` ... `{% endhint %}`: the text between stays)."""
    out: list[str] = []
    fence = None
    for line in lines:
        unwrapped = _LIQUID_RAW.sub("", line)
        if unwrapped != line and not unwrapped.strip():
            continue  # a line that held only the tag goes with it
        fence, in_code = _fence_state(unwrapped, fence)
        out.append("" if not in_code and _LIQUID_LINE.match(unwrapped) else unwrapped)
    return out


# -- markup -----------------------------------------------------------------------------------------------------


def _resolve_references(lines: list[str]) -> list[str]:
    """Outside code: a reference link reads as its text, a link definition goes, a footnote mark goes and its note
    stays as a paragraph of its own."""
    prose = list(_outside_fences(lines))
    labels = {m.group(1).strip().lower() for m in map(_REFERENCE_DEFINITION.match, prose) if m}
    notes = {m.group(1) for m in map(_FOOTNOTE_NOTE.match, prose) if m}

    # Only what the page defines is resolved: `x[i][j]` or a regex's `[^a-z]` in prose is no link
    def link(m: re.Match) -> str:
        return m.group(1) if (m.group(m.lastindex) or m.group(1)).strip().lower() in labels else m.group(0)

    def inline(text: str) -> str:
        text = _FOOTNOTE_MARK.sub(lambda m: "" if m.group(1) in notes else m.group(0), text)
        return _SHORTCUT_LINK.sub(link, _REFERENCE_LINK.sub(link, text))

    out: list[str] = []
    for line, in_code in _with_code_state(lines):
        if in_code:
            out.append(line)
        elif _REFERENCE_DEFINITION.match(line):
            out.append("")
        elif note := _FOOTNOTE_NOTE.match(line):
            out += ["", _outside_code_spans(line[note.end():], inline), ""]
        else:
            out.append(_outside_code_spans(line, inline))
    return out


def _unindent_admonitions(lines: list[str]) -> list[str]:
    """MkDocs `!!! note "Title"` / `??? note` / `???+ note`: the marker goes (a title stays, bold) and the body,
    indented under it, is dedented so its paragraphs, lists and code read as the page's own."""
    out: list[str] = []
    fence = None
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        fence, in_code = _fence_state(line, fence)
        marker = None if in_code else _INDENTED_ADMONITION.match(line)
        if not marker:
            out.append(line)
            continue
        width = len(marker.group(1).expandtabs(4)) + 4
        body: list[str] = []
        while number < len(lines) and (inner := _dedented(lines[number], width)) is not None:
            body.append(inner)
            number += 1
        out += _block_title(marker.group(2)) + _unindent_admonitions(body) + [""]
    return out


def _dedented(line: str, width: int) -> str | None:
    """The line without `width` columns of indentation (tabs count 4); None when it is not indented that far."""
    if not line.strip():
        return ""
    lead = len(line) - len(line.lstrip(" \t"))
    indent = line[:lead].expandtabs(4)
    return indent[width:] + line[lead:] if len(indent) >= width else None


def _block_title(title: str | None) -> list[str]:
    """An admonition marker becomes a paragraph break, and its custom title a bold line of its own."""
    return [f"**{title.strip()}**", ""] if title and title.strip() else [""]


def _fence_jsx_code(lines: list[str]) -> list[str]:
    """MDX code given as a JSX template literal (`<CodeBlock>{`...`}</CodeBlock>`) becomes a fenced block, so it
    is kept verbatim like any other code."""
    out: list[str] = []
    literal: list[str] | None = None
    fence = None
    for line in lines:
        if literal is None:
            fence, in_code = _fence_state(line, fence)
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


def _fenced(code: list[str]) -> list[str]:
    """Code lines between fences longer than any backtick run that starts one of them."""
    runs = [len(m.group(1)) for m in (re.match(r"\s*(`+)", line) for line in code) if m]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [fence, *code, fence]


def _drop_html_comments(lines: list[str]) -> list[str]:
    """`<!-- ... -->` outside code, on one line or many."""
    out: list[str] = []
    fence, in_comment = None, False
    for line in lines:
        if in_comment:
            if "-->" not in line:
                continue
            line, in_comment = line.split("-->", 1)[1], False
        else:
            fence, in_code = _fence_state(line, fence)
            if in_code:
                out.append(line)
                continue
        kept = _HTML_COMMENT.sub("", line)
        if "<!--" in kept:
            kept, in_comment = kept.split("<!--", 1)[0], True
        out.append(kept if kept.strip() else "")
    return out


def clean_mdx(lines: list[str]) -> list[str]:
    """Drop MDX import/export lines, JSX/HTML tags (keeping inner text) and admonition markers; code stays verbatim.

    A JSX tag spread over many lines (props holding data, as in `<HardwareTable rows={[...]} />`) keeps the
    prose of its string props, one line for the tag. A line that held only markup becomes a blank line: the
    tags around a block (`</TabItem>`) separate it from the next. Terminal captures (console/shell fences)
    lose their HTML colouring tags; other code blocks keep theirs.
    """
    out, fence, tag, terminal = [], None, None, False
    for line in lines:
        opening = fence is None
        fence, in_code = _fence_state(line, fence)
        if tag is not None:
            tag.append(line)
            if _tag_closed("\n".join(tag)):
                out.append(_prose_props("\n".join(tag)))
                tag = None
            continue
        if in_code:
            if opening:
                terminal = _FENCE.match(line).group(2).lower() in TERMINAL_LANGUAGES
            out.append(_terminal_text(line) if terminal else line)
            continue
        if _JSX_OPEN.match(line) and not _tag_closed(line):
            tag = [line]
            continue
        if _MDX_STATEMENT.match(line):
            continue
        admonition = _ADMONITION.match(line)
        if admonition:  # ":::tip Custom title" and ":::tip[Custom title]" keep their title
            out += _block_title(re.sub(r"^\[(.*)\]$", r"\1", admonition.group(2).strip()))
            continue
        block_marker = _BLOCK_MARKER.match(line)
        if block_marker:  # "/// note | Technical Details", "//// tab | Python 3.10+" keep their title
            out += _block_title(block_marker.group(1))
            continue
        cleaned = _prose_text(line, in_heading=bool(_HEADING.match(line)))
        out.append(line if cleaned == line else cleaned.rstrip())  # untouched lines keep a hard break ("  ")
    return out


def _prose_text(line: str, in_heading: bool) -> str:
    """A prose line without tags: `<abbr>`/`<dfn>` keep their title in parentheses (not in a heading); then,
    outside inline code spans, `<code>` becomes backticks, a cell or line break a space, and other tags go."""
    line = _TITLED_TERM.sub(r"\4" if in_heading else r"\4 (\3)", line)
    return _outside_code_spans(
        line, lambda text: _JSX_TAG.sub("", _WORD_BREAK_TAG.sub(" ", _HTML_CODE.sub("`", _JSX_COMMENT.sub("", text))))
    )


def _terminal_text(line: str) -> str:
    """A terminal capture line rendered as HTML (`<font color=...>`, `<span style=...>`): the text the terminal
    shows. A line that carried such tags is HTML, so its entities (`&apos;`) are decoded too."""
    plain = _HTML_TAG.sub("", line)
    return html.unescape(plain) if plain != line else line


def _outside_code_spans(text: str, transform: Callable[[str], str]) -> str:
    """`transform` applied to the text between inline code spans; the spans stay verbatim."""
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [transform(text[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join(out) + transform(text[last:])


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


def _drop_empty_code_blocks(lines: list[str]) -> list[str]:
    """Fenced blocks with nothing inside (all a dropped include held) would be cited as an empty snippet."""
    out: list[str] = []
    block: list[str] = []
    fence = None
    for line in lines:
        fence, in_code = _fence_state(line, fence)
        if not in_code:
            out.append(line)
            continue
        block.append(line)
        if fence is None:  # the closing fence
            if any(inner.strip() for inner in block[1:-1]):
                out += block
            block = []
    return out + block  # a block never closed is kept as it is


def join_wrapped_lines(text: str) -> str:
    """Hard-wrapped Markdown prose rejoined: each paragraph, list item and quoted paragraph on one line.

    A line continues the one before with a space unless a blank line comes between, or it starts a list item,
    a heading, a fence, a table, an HTML block, a rule or a change of blockquote depth; a list item's indented
    lines continue it. A line ending in a hard break (two spaces or a backslash) ends its line. Code blocks
    (fenced or indented) and tables stay byte for byte.
    """
    lines = text.split("\n")
    out: list[str] = []
    fence = None
    open_depth: int | None = None  # the blockquote depth of the last line out, while the next line may continue it
    in_list = in_table = False
    for number, line in enumerate(lines):
        fence, in_code = _fence_state(line, fence)
        markers = _QUOTE_MARKERS.match(line)
        depth = markers.group(0).count(">") if markers else 0
        content = line[markers.end() :] if markers else line
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
        elif _HEADING.match(content) or (indent == 0 and out and not out[-1].strip()):
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
    return bool(_HEADING.match(content) or stripped.startswith(("|", "<")) or _RULE_OR_UNDERLINE.match(content))


# -- sections, titles and urls ----------------------------------------------------------------------------------


def split_sections(lines: list[str], title: str) -> list[Section]:
    """Sections by ATX headings (outside code fences); the heading path skips no text and tolerates skipped levels."""
    sections: list[Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, heading text, anchor)
    body: list[str] = []
    fence = None

    def flush():
        text = "\n".join(body).strip()
        if text:
            path = tuple(h for _, h, _ in stack)
            if not stack or (stack[0][0] != 1 and stack[0][1] != title):  # a title taken from it is not repeated
                path = (title,) + path
            sections.append(Section(path, stack[-1][2] if len(path) > 1 else "", text))
        body.clear()

    for line in lines:
        fence, in_code = _fence_state(line, fence)
        heading = None if in_code else _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, *_heading(heading.group(2))))
        else:
            body.append(line)
    flush()
    return sections


def toc_titles(book_dir: Path) -> dict[str, str]:
    """The page titles the book's table of contents gives, by source path: mdBook's SUMMARY.md, MkDocs' nav."""
    book = Path(book_dir).resolve()
    return {**_mkdocs_nav_titles(book), **_summary_titles(book)}


def _summary_titles(book: Path) -> dict[str, str]:
    """mdBook's `SUMMARY.md`: `- [Title](path.md)` entries, nested, and prefix chapters without a bullet."""
    path = book / SUMMARY_FILE
    if not path.is_file():
        return {}
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("ignored %s for page titles: %s", SUMMARY_FILE, exc)
        return {}
    titles: dict[str, str] = {}
    for entry in filter(None, map(_SUMMARY_ENTRY.match, _outside_fences(lines))):
        source = _book_relative(book / unquote(entry.group(2).split("#")[0]), book) if entry.group(2) else None
        if source:
            titles.setdefault(source, _plain(entry.group(1)))
    return titles


class _TolerantLoader(yaml.SafeLoader):
    """A safe YAML loader that reads tags it does not know (MkDocs' `!!python/name:...`, `!ENV`) as null."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _mkdocs_nav_titles(book: Path) -> dict[str, str]:
    """MkDocs' `nav` (`- Setup: guide/setup.md`, sections nested), from mkdocs.yml in the book folder or, since
    users pass its docs/ folder, its parent. Nav paths are relative to the config's `docs_dir`."""
    config_path = next((d / name for d in (book, book.parent) for name in MKDOCS_CONFIGS if (d / name).is_file()), None)
    if config_path is None:
        return {}
    try:
        config = _load_bounded_yaml(config_path.read_text(encoding="utf-8-sig"), _TolerantLoader,
                                    MKDOCS_CONFIG_MAX_CHARS)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        log.warning("ignored %s for page titles: %s", config_path, exc)
        return {}
    if not isinstance(config, dict):
        return {}
    docs_dir = config_path.parent / str(config.get("docs_dir") or "docs")
    titles: dict[str, str] = {}
    for title, target in _nav_entries(config.get("nav")):
        source = _book_relative(docs_dir / unquote(target.split("#")[0]), book)
        if source:
            titles.setdefault(source, _plain(title))
    return titles


def _nav_entries(nav: object) -> Iterator[tuple[str, str]]:
    """(title, file) pairs of an MkDocs nav, sections flattened; an entry without a title names no page."""
    if isinstance(nav, list):
        for item in nav:
            yield from _nav_entries(item)
    elif isinstance(nav, dict):
        for title, target in nav.items():
            if isinstance(target, str):
                if "://" not in target:  # an external link names no page of the book
                    yield str(title), target
            else:
                yield from _nav_entries(target)


def _book_relative(path: Path, book: Path) -> str | None:
    """A table-of-contents target as a page source (POSIX, relative to the book); None if it leaves the book."""
    relative = Path(os.path.relpath(path, book)).as_posix()  # lexical, as page sources are: links not followed
    return None if relative == "." or relative.split("/")[0] == ".." else relative


def page_url(source: str, slug: object, base_url: str) -> str:
    """Docusaurus routing: an absolute slug hangs off the docs root; otherwise the path without number prefixes.

    The URL stays under `base_url`: its segments are percent-encoded, and a slug that would leave the docs root
    (`../../etc`, `//host/x`, `https://host`) is not followed: the page keeps its file-path URL, with a warning."""
    parts = [_NUMBER_PREFIX.sub("", p) for p in PurePosixPath(source).with_suffix("").parts]
    if slug:
        segments = _slug_segments(str(slug), parts[:-1])
        if segments is not None:
            return _under(base_url, segments, folder=str(slug).startswith("/") and str(slug).endswith("/"))
        log.warning("%s: slug %r leaves the docs root; the page's URL follows its file path instead", source, slug)
    if parts[-1].lower() in ("index", "readme"):
        parts = parts[:-1]
    return _under(base_url, parts)


def _slug_segments(slug: str, folder: list[str]) -> list[str] | None:
    """The path segments a slug names (an absolute slug from the docs root, a relative one from the page's folder,
    `..` resolved); None if it leaves the docs root or is a URL of its own."""
    if slug.startswith("//") or re.match(r"[A-Za-z][\w+.-]*:", slug) or "\\" in slug:
        return None
    segments = [] if slug.startswith("/") else list(folder)
    for segment in slug.split("/"):
        if segment == "..":
            if not segments:
                return None
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return segments


def _under(base_url: str, segments: list[str], folder: bool = False) -> str:
    path = "/".join(quote(segment, safe="") for segment in segments)
    return base_url.rstrip("/") + "/" + path + ("/" if folder and path else "")


def _fence_state(line: str, fence: str | None) -> tuple[str | None, bool]:
    """(new fence state, is this line code). A fence closes only with the same char and at least its length."""
    m = _FENCE.match(line)
    if fence is None:
        return (m.group(1), True) if m else (None, False)
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
        return None, True
    return fence, True


def _with_code_state(lines: list[str]):
    """Each line with whether it is code (a fence line or inside a fence)."""
    fence = None
    for line in lines:
        fence, in_code = _fence_state(line, fence)
        yield line, in_code


def _outside_fences(lines: list[str]):
    return (line for line, in_code in _with_code_state(lines) if not in_code)


def _module_of(source: str) -> str:
    parts = PurePosixPath(source).parts
    return _NUMBER_PREFIX.sub("", parts[0]) if len(parts) > 1 else ROOT_MODULE


def _heading(markdown: str) -> tuple[str, str]:
    """(plain text, anchor) of a heading: an attribute list (`{ #id }`, `{#id}`, `{: #id .class }`) is not text,
    and its id, when it gives one, is the anchor; otherwise the anchor is the text's slug."""
    attributes = _ATTRIBUTE_LIST.search(markdown)
    text = _plain(markdown[: attributes.start()] if attributes else markdown)
    explicit_id = _EXPLICIT_ID.search(attributes.group(1)) if attributes else None
    return text, explicit_id.group(1) if explicit_id else _anchor(text)


def _plain(markdown: str) -> str:
    """Inline Markdown as a reader sees it: link text without its target, no emphasis marks or code ticks (code
    keeps its underscores and asterisks)."""
    text = _outside_code_spans(_LINK.sub(r"\1", markdown), lambda s: _EMPHASIS_UNDERSCORES.sub("", s.replace("*", "")))
    return text.replace("`", "").strip()


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")


def _humanize(stem: str) -> str:
    return _NUMBER_PREFIX.sub("", stem).replace("-", " ").replace("_", " ").strip().capitalize()
