"""Read one page of a Markdown book (Docusaurus, MkDocs, mdBook or Jekyll/GitBook sources) into a `Page` of
heading-delimited sections.

Cleans what a reader never sees and keeps what they read. Common Markdown (every page): front matter, YAML or
TOML, goes (`front_matter`), HTML comments and layout HTML/JSX tags go, their inner text staying (`markup`), link
definitions and footnote marks go (a reference link reads as its text, a footnote's note stays: `references`),
setext headings (`Title` over `===`) read as `# Title`, heading attribute lists (`{ #id }`) go, the id becoming
the section anchor (`headings`); HTML markup in terminal captures (console/shell fences) is reduced to the text
the terminal shows; other fenced code blocks and tables are kept verbatim (`fences`); hard-wrapped prose is joined
into one line per paragraph (`paragraphs`).

Each site generator's own syntax lives in its file, listed in `generators.SITE_GENERATORS`:
- `docusaurus`: MDX imports/exports, code as JSX template literals, `:::` admonitions;
- `mkdocs`: `!!!`/`???` admonitions and `===` content tabs (indented bodies dedented), `///` blocks, `--8<--` and
  `{* file *}` snippets (dropped: they resolve against the site's project root), the mkdocs.yml `nav`;
- `mdbook`: the `{{#include}}` family (resolved when the file lies inside the book folder), the lines it hides in
  Rust code blocks, SUMMARY.md;
- `jekyll`: Jekyll/Liquid and GitBook template tags (`{% raw %}`, `{% hint %}`).

Page titles come from front matter, the first H1, the book's table of contents (mdBook `SUMMARY.md`, MkDocs
`nav`), the first heading of any level, or, last, the file name (`page`); URLs follow Docusaurus routing (`urls`).
"""

from retrievers.markdown.fences import fence_state
from retrievers.markdown.front_matter import FRONT_MATTER_MAX_CHARS
from retrievers.markdown.mkdocs import MKDOCS_CONFIGS
from retrievers.markdown.page import BookFileError, Page, Section
from retrievers.markdown.paragraphs import join_wrapped_lines
from retrievers.markdown.reader import MARKDOWN_SUFFIXES, find_pages, parse_page, toc_titles
from retrievers.markdown.urls import page_url

__all__ = [
    "FRONT_MATTER_MAX_CHARS",
    "MARKDOWN_SUFFIXES",
    "MKDOCS_CONFIGS",
    "BookFileError",
    "Page",
    "Section",
    "fence_state",
    "find_pages",
    "join_wrapped_lines",
    "page_url",
    "parse_page",
    "toc_titles",
]
