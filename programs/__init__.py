"""DSPy signatures and modules, metrics, artifact save/load, and language-model setup.

    from programs import load_program
    rag = load_program("artifacts/humanoid-primer")
    print(rag.ask("What is ROS 2?").answer)
"""

from programs.compile.artifact import load_program
from programs.rag.book_rag import BookRAG
from programs.rag.response import Citation, Response

__all__ = ["BookRAG", "Citation", "Response", "load_program"]
