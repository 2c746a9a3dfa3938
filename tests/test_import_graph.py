"""The house's floors: a package imports only its own floor and those below it, never one above.

    bookrag/ (config, errors, CLI plumbing)  <  retrievers/  <  programs/text, programs/lm, programs/train
      <  programs/refusal  <  programs/rag  <  programs/evaluate  <  programs/compile  <  programs/cli (the commands)

Every import counts, including those inside functions and under TYPE_CHECKING: a lazy import still makes the lower
floor depend on the upper one. And no module imports one that imports it back, however far round: a protocol beside
the factory that imports its implementations made 3 such circles in retrievers/ (now retrievers/backends.py).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {
    "bookrag": 0,
    "retrievers": 1,
    "programs.text": 2,
    "programs.lm": 2,
    "programs.train": 2,
    "programs.refusal": 3,
    "programs.rag": 4,
    "programs.evaluate": 5,
    "programs.compile": 6,
    "programs.cli": 7,
}


def room(module: str) -> str | None:
    """The floor's key of a dotted module name (`programs.rag.book_rag` -> `programs.rag`), None outside them."""
    parts = module.split(".")
    key = ".".join(parts[:2]) if parts[0] == "programs" else parts[0]
    return key if key in FLOORS else None


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def package_files() -> list[Path]:
    files = [p for folder in ("bookrag", "retrievers", "programs") for p in (ROOT / folder).rglob("*.py")]
    return [p for p in files if p != ROOT / "programs" / "__init__.py"]  # the lazy façade names every floor


def upward_imports() -> list[str]:
    found = []
    for path in package_files():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        here = room(module)
        for line, target in imports(path):
            there = room(target)
            if here and there and FLOORS[there] > FLOORS[here]:
                found.append(f"{path.relative_to(ROOT)}:{line} ({here}) imports {target} ({there})")
    return found


def test_no_package_imports_a_floor_above_its_own():
    assert upward_imports() == []


def test_an_import_from_a_floor_above_is_caught(tmp_path, monkeypatch):
    """The check itself: a retrievers/ file importing programs/ is reported."""
    fake_root = tmp_path
    (fake_root / "retrievers").mkdir()
    (fake_root / "retrievers" / "bad.py").write_text("def f():\n    from programs.rag.book_rag import BookRAG\n")
    for folder in ("bookrag", "programs"):
        (fake_root / folder).mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert upward_imports() == ["retrievers/bad.py:2 (retrievers) imports programs.rag.book_rag (programs.rag)"]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the project's modules it imports}. `from package import name` imports the submodule `name` when
    there is one (it needs no more of the package than Python's own import of it), else a name of the package."""
    modules = {module_name(path): path for path in package_files()}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                           for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            graph[module] |= {target for target in targets if target in modules and target != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other, however far round (the graph's strongly connected components
    of more than one module; Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                circles.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(circles)


def test_no_modules_import_each_other():
    assert import_circles(import_graph()) == []


def test_an_import_circle_is_caught(tmp_path, monkeypatch):
    """The check itself: a protocol whose factory imports an implementation that imports the protocol back, and a
    package whose `__init__` imports a module that imports the package."""
    (tmp_path / "retrievers").mkdir()
    (tmp_path / "retrievers" / "__init__.py").write_text("from retrievers.index import Index\nNAME = 'r'\n")
    (tmp_path / "retrievers" / "index.py").write_text("from retrievers import NAME, store\n")
    (tmp_path / "retrievers" / "store.py").write_text("def open_store():\n    from retrievers.edge import Edge\n")
    (tmp_path / "retrievers" / "edge.py").write_text("from retrievers.store import Store\n")
    for folder in ("bookrag", "programs"):
        (tmp_path / folder).mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_circles(import_graph()) == [["retrievers", "retrievers.index"],
                                              ["retrievers.edge", "retrievers.store"]]


@pytest.mark.parametrize("module", ["programs.compile.artifact", "programs", "programs.cli.ask", "bookrag.cli"])
def test_importing_these_does_not_load_dspy(module):
    """DSPy (and LiteLLM behind it) costs about a second: entry points read their arguments before paying it."""
    check = f"import {module}, sys; assert 'dspy' not in sys.modules, 'dspy was imported'"
    result = subprocess.run([sys.executable, "-c", check], check=False, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", ["programs", "programs.compile.optimizers", "programs.compile.finetune",
                                    "programs.cli.optimize", "programs.cli.evaluate", "programs.cli.ask",
                                    "programs.cli.train_reader"])
def test_importing_these_does_not_load_torch(module):
    """torch (seconds, a GB of memory) is for training the reader only: it is imported when a training starts."""
    check = f"import {module}, sys; assert 'torch' not in sys.modules, 'torch was imported'"
    result = subprocess.run([sys.executable, "-c", check], check=False, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
