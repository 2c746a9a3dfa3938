"""One name and one default for top-k (issue 40): the default and the search modes are written in bookrag/config.py
alone, and the program's API spells it `top_k` as the settings, ask.py and `ask` do: `k`, its old name, is gone."""

from __future__ import annotations

import ast
import warnings

import pytest
from conftest import PROJECT_ROOT

from bookrag.config import DEFAULT_TOP_K, SEARCH_MODES
from programs.rag.book_rag import BookRAG
from retrievers.passage import Passage

# Every product file: the packages and the command-line scripts beside them (benchmarks included).
PRODUCT = sorted(p for folder in ("bookrag", "retrievers", "programs", "benchmarks") for p in
                 (PROJECT_ROOT / folder).rglob("*.py")) + sorted(PROJECT_ROOT.glob("*.py"))
CONFIG = PROJECT_ROOT / "bookrag" / "config.py"


def top_k_defaults(tree: ast.AST) -> list[int]:
    """Lines where a number is the default of a `k` or `top_k`: a parameter's default, a field's, or `x.k or 5`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            named = [*node.posonlyargs, *node.args][-len(node.defaults):] if node.defaults else []
            pairs = [*zip(named, node.defaults), *zip(node.kwonlyargs, node.kw_defaults)]
            lines += [d.lineno for a, d in pairs if a.arg in ("k", "top_k") and isinstance(d, ast.Constant)
                      and isinstance(d.value, int)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "top_k":
            lines += [node.lineno] if isinstance(node.value, ast.Constant) else []
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            first, last = node.values[0], node.values[-1]
            named_k = isinstance(first, ast.Attribute) and first.attr in ("k", "top_k")
            lines += [node.lineno] if named_k and isinstance(last, ast.Constant) else []
    return lines


def mode_lists(tree: ast.AST) -> list[int]:
    """Lines where the three search modes are written out together (a tuple, a list, a Literal's arguments)."""
    modes = set(SEARCH_MODES)
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Tuple | ast.List | ast.Set)
            and {e.value for e in node.elts if isinstance(e, ast.Constant)} >= modes]


def test_the_top_k_default_and_the_search_modes_are_written_in_config_alone():
    found = []
    for path in PRODUCT:
        if path == CONFIG:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = path.relative_to(PROJECT_ROOT)
        found += [f"{name}:{line}: a top-k default" for line in top_k_defaults(tree)]
        found += [f"{name}:{line}: the search modes" for line in mode_lists(tree)]
    assert found == []
    config = ast.parse(CONFIG.read_text(encoding="utf-8"))
    assert len(top_k_defaults(config)) == 0 and len(mode_lists(config)) == 1  # DEFAULT_TOP_K; SearchMode


def test_the_scan_finds_what_it_looks_for():
    code = ("def f(q, k=5): ...\ndef g(*, top_k=3): ...\nclass S:\n    top_k: int = 5\n"
            "n = args.k or 5\nMODES = ('dense', 'sparse', 'hybrid')\n")
    tree = ast.parse(code)
    assert top_k_defaults(tree) == [1, 2, 4, 5] and mode_lists(tree) == [6]


class CountingRetriever:
    """Returns `k` passages for any query; records each `k` asked for."""

    def __init__(self):
        self.asked = []

    def search(self, query, k, module=None, mode="hybrid"):
        self.asked.append(k)
        return [Passage(id=str(i), score=1.0, text=f"passage {i}", title="", heading="", module="", source=f"{i}.md",
                        url="", dense_score=0.6) for i in range(k)]


def program(**kwargs) -> BookRAG:
    return BookRAG(CountingRetriever(), lm=None, search_mode="dense", answer_mode="extractive", **kwargs)


def test_a_program_reads_top_k_passages_by_default_and_as_a_call_asks():
    assert program().top_k == DEFAULT_TOP_K
    rag = program(top_k=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        rag(question="What is a node?")
        rag(question="What is a node?", top_k=2)
        rag.ask("What is a node?", top_k=4)
    assert rag.retriever.asked == [3, 2, 4]


def test_top_k_is_the_one_name_k_is_gone():
    """The constructor, forward, aforward and the attribute take `top_k` alone."""
    import asyncio

    with pytest.raises(TypeError, match="'k'"):
        program(k=3)
    rag = program(top_k=3)
    with pytest.raises(TypeError, match="'k'"):
        rag(question="What is a node?", k=2)
    with pytest.raises(TypeError, match="'k'"):
        asyncio.run(rag.acall(question="What is a node?", k=1))
    assert not hasattr(rag, "k") and rag.retriever.asked == []
    assert BookRAG(None, None, 6).top_k == 6  # by position, as before


def test_acall_takes_top_k():
    import asyncio

    rag = program(top_k=3)
    asyncio.run(rag.acall(question="What is a node?", top_k=2))
    assert rag.retriever.asked == [2]
