"""Find a book's pages and read each into a `Page`: front matter, then the cleaning pipeline (`readable_lines`), in
which the common Markdown steps and each site generator's rules (`generators.SITE_GENERATORS`) take their turn."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from retrievers.book_files import book_files, open_book_file
from retrievers.markdown.fences import drop_empty_code_blocks
from retrievers.markdown.front_matter import split_front_matter
from retrievers.markdown.generators import SITE_GENERATORS
from retrievers.markdown.headings import setext_as_atx
from retrievers.markdown.markup import clean_markup, drop_html_comments
from retrievers.markdown.page import BookFileError, Page, module_of, page_title, split_sections
from retrievers.markdown.paragraphs import join_wrapped_lines
from retrievers.markdown.references import resolve_references
from retrievers.markdown.urls import page_url

log = logging.getLogger(__package__)
MARKDOWN_SUFFIXES = (".md", ".mdx")
_NOT_PAGES = frozenset((name,) for syntax in SITE_GENERATORS for name in syntax.root_files)
_MARKERS = tuple(marker for syntax in SITE_GENERATORS for marker in syntax.markers)


def find_pages(book_dir: Path) -> list[Path]:
    """Every .md/.mdx file of the book (`book_files`: regular files inside the folder, hidden folders and
    node_modules left out), in a stable order. A page that is not read (a link leading out of the book, a named
    pipe) is skipped with a warning saying why. A generator's file at the root that is no page (mdBook's table of
    contents, SUMMARY.md) is skipped too.
    """
    walked = book_files(book_dir)
    for rel, why in walked.skipped.items():
        if _is_page(rel):
            log.warning("skipped %s: %s", rel, why)
    return [Path(file.path) for file in walked.files if _is_page(file.rel)]


def _is_page(rel: str) -> bool:
    return PurePosixPath(rel).suffix.lower() in MARKDOWN_SUFFIXES and tuple(rel.split("/")) not in _NOT_PAGES


def parse_page(path: Path, book_dir: Path, base_url: str = "/docs", toc: Mapping[str, str] | None = None) -> Page:
    """`toc` maps sources to the titles the book's table of contents gives them (see `toc_titles`)."""
    source = PurePosixPath(Path(path).relative_to(book_dir)).as_posix()
    try:
        with open_book_file(path) as handle:
            raw = handle.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BookFileError(source, f"not UTF-8 text (byte {exc.start}); re-save the file as UTF-8") from None
    except OSError as exc:
        raise BookFileError(source, f"cannot be read ({exc.strerror})") from None
    front, body = split_front_matter(raw, source)
    lines = readable_lines(body, Path(path).parent, Path(book_dir).resolve())
    title = page_title(front, lines, (toc or {}).get(source), source)
    module = str(front.get("module") or module_of(source))
    return Page(
        source=source,
        title=title,
        module=module,
        url=page_url(source, front.get("slug"), base_url),
        sections=tuple(split_sections(lines, title)),
    )


def readable_lines(body: str, page_dir: Path, book_root: Path) -> list[str]:
    """A page's Markdown body as its reader sees it, line by line: each step removes one kind of markup."""
    for syntax in SITE_GENERATORS:
        if syntax.includes:
            body = syntax.includes(body, page_dir, book_root)
    lines = body.splitlines()
    for line_pass in (line_pass for syntax in SITE_GENERATORS for line_pass in syntax.line_passes):
        lines = line_pass(lines)
    lines = resolve_references(lines)
    for code_pass in (code_pass for syntax in SITE_GENERATORS for code_pass in syntax.code_passes):
        lines = code_pass(lines)
    lines = setext_as_atx(lines)
    lines = drop_html_comments(lines)
    lines = clean_markup(lines, _MARKERS)
    lines = drop_empty_code_blocks(lines)
    return join_wrapped_lines("\n".join(lines)).split("\n")


def toc_titles(book_dir: Path) -> dict[str, str]:
    """The page titles the book's tables of contents give, by source path (mdBook's SUMMARY.md, MkDocs' nav); for
    a page two of them title, the generator listed first wins."""
    book = Path(book_dir).resolve()
    titles: dict[str, str] = {}
    for syntax in reversed(SITE_GENERATORS):
        if syntax.toc_titles:
            titles.update(syntax.toc_titles(book))
    return titles
