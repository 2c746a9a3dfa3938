"""Read one page of a Markdown book into a `Page` of heading-delimited sections (see `reader`)."""

from retrievers.markdown.reader import (
    FRONT_MATTER_MAX_CHARS,
    MARKDOWN_SUFFIXES,
    MKDOCS_CONFIGS,
    BookFileError,
    Page,
    Section,
    _fence_state,
    find_pages,
    join_wrapped_lines,
    page_url,
    parse_page,
    toc_titles,
)

__all__ = [
    "FRONT_MATTER_MAX_CHARS",
    "MARKDOWN_SUFFIXES",
    "MKDOCS_CONFIGS",
    "BookFileError",
    "Page",
    "Section",
    "_fence_state",
    "find_pages",
    "join_wrapped_lines",
    "page_url",
    "parse_page",
    "toc_titles",
]
