"""Which LoRA adapter answers is the LM's to say (`lm_adapter`): chosen from the settings by `make_lm`, replaced only
through `with_adapter`, and read nowhere else through the engine's attributes."""

from __future__ import annotations

import ast
from pathlib import Path

from bookrag.config import Settings
from programs.lm.language_model import lm_adapter, make_lm, with_adapter
from programs.lm.reader_adapter import ReaderAdapter

ROOT = Path(__file__).resolve().parents[1]


def test_the_configured_adapter_is_the_one_the_lm_reports(tmp_path):
    adapter = tmp_path / "reader.gguf"
    assert lm_adapter(make_lm(Settings(data_dir=tmp_path, local_adapter=adapter))) == ReaderAdapter(adapter)
    assert lm_adapter(make_lm(Settings(data_dir=tmp_path, local_adapter=None))) is None
    assert lm_adapter(make_lm(Settings(data_dir=tmp_path, lm="openai/gpt-4o-mini"))) is None
    assert lm_adapter(None) is None


def test_another_adapter_makes_another_lm_and_keeps_its_training_record(tmp_path):
    base = make_lm(Settings(data_dir=tmp_path, local_adapter=None))
    trained = ReaderAdapter(tmp_path / "adapter.gguf", training={"steps": 3})
    adapted = with_adapter(base, trained)
    assert lm_adapter(adapted) == trained and lm_adapter(base) is None
    assert with_adapter(adapted, trained) is adapted
    assert lm_adapter(with_adapter(adapted, None)) is None


def _reads_an_engines_adapter(node: ast.AST) -> bool:
    """`<...>.engine.adapter`, `engine.adapter`, or `getattr(..., "adapter")`."""
    if isinstance(node, ast.Attribute) and node.attr == "adapter":
        owner = node.value
        return (isinstance(owner, ast.Attribute) and owner.attr == "engine") or \
            (isinstance(owner, ast.Name) and owner.id == "engine")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "adapter")


def _sets_a_training_attribute(node: ast.AST) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(target, ast.Attribute) and target.attr == "training" for target in targets)


def test_no_code_outside_the_lm_package_reads_the_adapter_through_the_engine():
    """The answer comes from `lm_adapter(lm)`: an attribute chain misses the adapter a trained program answers with
    (and an ad-hoc `program.training` is lost on the way to the manifest)."""
    files = [p for folder in ("bookrag", "retrievers", "programs", "benchmarks", "tests") for p in
             (ROOT / folder).rglob("*.py") if not p.is_relative_to(ROOT / "programs" / "lm")]
    found = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in [*files, *ROOT.glob("*.py")]
             for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
             if _reads_an_engines_adapter(node) or _sets_a_training_attribute(node)]
    assert found == []
