"""What a site generator adds to Markdown, as the rules the reading pipeline (`reader.readable_lines`) applies.

Each generator's file (`docusaurus.py`, `mkdocs.py`, `mdbook.py`, `jekyll.py`) exposes one `Syntax`; the pipeline
reads them from `generators.SITE_GENERATORS`, in that order, at each of its steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LinePass = Callable[[list[str]], list[str]]
# A prose line that is the generator's block marker -> the lines it becomes ([] drops it); None for any other line
Marker = Callable[[str], list[str] | None]


@dataclass(frozen=True)
class Syntax:
    name: str
    # The page's text, its folder, the book root -> the text with the generator's include directives resolved or gone
    includes: Callable[[str, Path, Path], str] | None = None
    line_passes: tuple[LinePass, ...] = ()  # on the page's lines before links and tags are read
    code_passes: tuple[LinePass, ...] = ()  # after links are read: code written another way becomes a fenced block
    markers: tuple[Marker, ...] = ()  # tried on each prose line while tags are removed
    toc_titles: Callable[[Path], dict[str, str]] | None = None  # the book folder -> page titles by source
    root_files: tuple[str, ...] = ()  # files at the book root that are not pages (mdBook's SUMMARY.md)
