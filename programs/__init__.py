"""DSPy signatures and modules, metrics, artifact save/load, and language-model setup.

    from programs import load_program
    rag = load_program("artifacts/humanoid-primer")
    print(rag.ask("What is ROS 2?").answer)

The names below are imported on first use (PEP 562): `import programs.compile.artifact` must not load DSPy
(about a second), which `BookRAG` does.
"""

from importlib import import_module

_EXPORTS = {
    "BookRAG": "programs.rag.book_rag",
    "Citation": "programs.rag.response",
    "Response": "programs.rag.response",
    "load_program": "programs.compile.artifact",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'programs' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
