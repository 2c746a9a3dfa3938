"""The site generators' syntax files and the registry the Markdown reader reads them from."""

from __future__ import annotations

import importlib
import pkgutil

import retrievers.markdown
from retrievers.markdown.generators import SITE_GENERATORS
from retrievers.markdown.syntax import Syntax


def declared_syntaxes() -> list[Syntax]:
    """The `SYNTAX` each module of the package exposes: the generators' files."""
    modules = (importlib.import_module(f"retrievers.markdown.{m.name}") for m in
               pkgutil.iter_modules(retrievers.markdown.__path__))
    return [module.SYNTAX for module in modules if isinstance(getattr(module, "SYNTAX", None), Syntax)]


def test_every_generators_syntax_file_is_in_the_registry():
    """A new generator's file left out of SITE_GENERATORS would be silently ignored by the pipeline."""
    assert sorted(s.name for s in declared_syntaxes()) == sorted(s.name for s in SITE_GENERATORS)
    assert {s.name for s in SITE_GENERATORS} == {"Docusaurus", "MkDocs", "mdBook", "Jekyll/GitBook"}
