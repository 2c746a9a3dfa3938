"""Read one Markdown/MDX page of a Docusaurus-style book into a `Page` of heading-delimited sections.

Cleans what a reader never sees (front matter, MDX imports/exports, JSX tags, admonition fences) and
leaves what matters intact: fenced code blocks (never touched), tables, the inner text of components.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

log = logging.getLogger(__name__)
MARKDOWN_SUFFIXES = (".md", ".mdx")
ROOT_MODULE = "general"

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")  # any indent: fences nest in list items
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")  # a closing #-run needs a space: "C#" stays
_MDX_STATEMENT = re.compile(r"^\s*(import|export)\s")
# Capitalized JSX components (<Tabs>, </TabItem>, <Foo />) and the few HTML tags MDX pages use for layout.
_JSX_TAG = re.compile(
    r"</?(?:[A-Z][\w.]*|details|summary|div|span|br|center|p|img|a|sup|sub)(?:\s(?:[^<>{}]|\{[^{}]*\})*)?/?>"
)
_JSX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_JSX_OPEN = re.compile(r"^\s*<[A-Z][\w.]*(\s|$)")
_STRING_LITERAL = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_ADMONITION = re.compile(r"^\s*:::\s*(\w+)?\s*(.*)$")
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
    quoting it, must hold only the book.
    """
    root = Path(book_dir).resolve()
    found = []
    for path in sorted(Path(book_dir).rglob("*")):
        rel = path.relative_to(book_dir).parts
        if any(p.startswith(".") or p == "node_modules" for p in rel):
            continue
        if path.suffix.lower() in MARKDOWN_SUFFIXES and path.is_file():
            if not path.resolve().is_relative_to(root):
                log.warning("skipped %s: it links to %s, outside the book folder", "/".join(rel), path.resolve())
                continue
            found.append(path)
    return found


def parse_page(path: Path, book_dir: Path, base_url: str = "/docs") -> Page:
    source = PurePosixPath(Path(path).relative_to(book_dir)).as_posix()
    try:
        raw = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BookFileError(source, f"not UTF-8 text (byte {exc.start}); re-save the file as UTF-8") from None
    except OSError as exc:
        raise BookFileError(source, f"cannot be read ({exc.strerror})") from None
    front, body = split_front_matter(raw, source)
    lines = clean_mdx(body.splitlines())
    first_h1 = next((m.group(2) for m in map(_HEADING.match, _outside_fences(lines)) if m and len(m.group(1)) == 1), None)
    title = str(front.get("title") or front.get("sidebar_label") or first_h1 or _humanize(PurePosixPath(source).stem))
    module = str(front.get("module") or _module_of(source))
    return Page(
        source=source,
        title=title,
        module=module,
        url=page_url(source, front.get("slug"), base_url),
        sections=tuple(split_sections(lines, title)),
    )


def split_front_matter(raw: str, source: str) -> tuple[dict, str]:
    """YAML front matter between `---` lines at the top; a broken block is an error naming the file."""
    if not raw.startswith("---"):
        return {}, raw
    lines = raw.split("\n")
    if lines[0].strip() != "---":
        return {}, raw
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            try:
                front = yaml.safe_load("\n".join(lines[1:end])) or {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark else ""
                raise BookFileError(source, f"broken YAML front matter{where}: fix or remove the --- block") from None
            if not isinstance(front, dict):
                raise BookFileError(source, "front matter is not a mapping of `key: value` lines")
            return front, "\n".join(lines[end + 1 :])
    raise BookFileError(source, "front matter opened with --- is never closed")


def clean_mdx(lines: list[str]) -> list[str]:
    """Drop MDX import/export lines, JSX tags (keeping inner text) and admonition fences; code stays verbatim.

    A JSX tag spread over many lines (props holding data, as in `<HardwareTable rows={[...]} />`) keeps the
    prose of its string props, one line for the tag.
    """
    out, fence, tag = [], None, None
    for line in lines:
        fence, in_code = _fence_state(line, fence)
        if tag is not None:
            tag.append(line)
            if _tag_closed("\n".join(tag)):
                out.append(_prose_props("\n".join(tag)))
                tag = None
            continue
        if in_code:
            out.append(line)
            continue
        if _JSX_OPEN.match(line) and not _tag_closed(line):
            tag = [line]
            continue
        if _MDX_STATEMENT.match(line):
            continue
        admonition = _ADMONITION.match(line)
        if admonition:
            if admonition.group(2):  # ":::tip Custom title" keeps its title
                out.append(f"**{admonition.group(2).strip()}**")
            continue
        cleaned = _JSX_TAG.sub("", _JSX_COMMENT.sub("", line))
        if cleaned.strip() or not line.strip():
            out.append(cleaned.rstrip())
    return out


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


def split_sections(lines: list[str], title: str) -> list[Section]:
    """Sections by ATX headings (outside code fences); the heading path skips no text and tolerates skipped levels."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []
    fence = None

    def flush():
        text = "\n".join(body).strip()
        if text:
            path = tuple(h for _, h in stack)
            if not stack or stack[0][0] != 1:
                path = (title,) + path
            sections.append(Section(path, _anchor(stack[-1][1]) if len(path) > 1 else "", text))
        body.clear()

    for line in lines:
        fence, in_code = _fence_state(line, fence)
        heading = None if in_code else _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _plain(heading.group(2))))
        else:
            body.append(line)
    flush()
    return sections


def page_url(source: str, slug: object, base_url: str) -> str:
    """Docusaurus routing: an absolute slug hangs off the docs root; otherwise the path without number prefixes."""
    base = base_url.rstrip("/")
    parts = [_NUMBER_PREFIX.sub("", p) for p in PurePosixPath(source).with_suffix("").parts]
    if slug:
        slug = str(slug)
        if slug.startswith("/"):
            return base + (slug if slug != "/" else "/")
        parts = parts[:-1] + [slug.strip("/")]
    elif parts[-1].lower() in ("index", "readme"):
        parts = parts[:-1]
    return base + "/" + "/".join(parts)


def _fence_state(line: str, fence: str | None) -> tuple[str | None, bool]:
    """(new fence state, is this line code). A fence closes only with the same char and at least its length."""
    m = _FENCE.match(line)
    if fence is None:
        return (m.group(1), True) if m else (None, False)
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
        return None, True
    return fence, True


def _outside_fences(lines: list[str]):
    fence = None
    for line in lines:
        fence, in_code = _fence_state(line, fence)
        if not in_code:
            yield line


def _module_of(source: str) -> str:
    parts = PurePosixPath(source).parts
    return _NUMBER_PREFIX.sub("", parts[0]) if len(parts) > 1 else ROOT_MODULE


def _plain(heading: str) -> str:
    """Heading text without Markdown emphasis, inline code ticks or an explicit {#anchor}."""
    heading = re.sub(r"\s*\{#[^}]*\}\s*$", "", heading)
    return re.sub(r"[*_`]", "", heading).strip()


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-")


def _humanize(stem: str) -> str:
    return _NUMBER_PREFIX.sub("", stem).replace("-", " ").replace("_", " ").strip().capitalize()
