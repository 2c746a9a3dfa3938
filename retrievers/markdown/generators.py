"""The site generators whose syntax the reader knows. A new generator is one file exposing a `Syntax` and one
entry here.

The order is the order each pipeline step applies their rules in, and it matters: mdBook's includes are
expanded before MkDocs' snippet lines are dropped (an included file may hold one), Rust's hidden lines go before
Liquid tags, and those before MkDocs' indented blocks are dedented. A table of contents earlier in the list wins
over a later one for the same page (mdBook's SUMMARY.md over an mkdocs.yml nav).
"""

from retrievers.markdown import docusaurus, jekyll, mdbook, mkdocs

SITE_GENERATORS = (mdbook.SYNTAX, jekyll.SYNTAX, mkdocs.SYNTAX, docusaurus.SYNTAX)
