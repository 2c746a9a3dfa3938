"""The tiny book of the BookRAG tests: five pages, each with its own vocabulary, a question per page, and what
a test needs to drive a program over it without a model (a hashed embedder, a pinned gate, replies in the LM's
format). The fixtures over it (`index`, `make`, `hosted_lm`) are in conftest.py."""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the refusal gate loads DSPy (a second): conftest.py imports this module
    from programs.refusal.refusal_gate import RefusalGate

# Each page has its own vocabulary, so a question's words find its page under both dense (hashed) and BM25 search.
BOOK = {
    "intro.md": """
        ---
        title: Welcome
        ---

        # Welcome

        The teaching robot is called Quillon. Quillon is 1.4 m tall and weighs 31 kg.
        """,
    "01-ros2/01-topics.md": """
        ---
        title: Topics
        ---

        # Topics

        Topics carry messages between nodes. The zephyrine reliability profile keeps messages when packets drop.
        """,
    "01-ros2/02-launch.md": """
        ---
        title: Launch Files
        ---

        # Launch Files

        Launch files start many nodes at once. The marlowe launcher reads its parameters from a YAML file.
        """,
    "02-sim/01-gazebo.md": """
        ---
        title: Gazebo Physics
        ---

        # Gazebo Physics

        Gazebo simulates gravity, friction and contact. The tarrasque solver runs physics at 1000 Hz.
        """,
    "02-sim/02-sensors.md": """
        ---
        title: Simulated Sensors
        ---

        # Simulated Sensors

        Simulated lidar sensors publish noisy scans. The brindlewood camera model adds lens distortion.
        """,
}
SOURCES = {  # a question per page, answered from that page
    "How tall is Quillon the teaching robot?": ("intro.md", "1.4 m tall"),
    "What does the zephyrine reliability profile keep?": ("01-ros2/01-topics.md", "zephyrine"),
    "Where does the marlowe launcher read its parameters?": ("01-ros2/02-launch.md", "YAML"),
    "How fast does the tarrasque solver run physics?": ("02-sim/01-gazebo.md", "1000 Hz"),
    "What does the brindlewood camera model add?": ("02-sim/02-sensors.md", "lens distortion"),
}


class HashedEmbedder:
    """A deterministic bag-of-words embedder (dim 16); records the queries it embeds."""

    name = "hash16"
    model_id = "tests/hashed-bag-of-words-16"
    dim = 16

    def __init__(self):
        self.queries: list[str] = []

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.sha1(word.encode()).digest()
            vec[digest[0] % self.dim] += 1.0 if digest[1] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self._vector(text)


def pin_gate(gate: RefusalGate, probability: float, threshold: float = 0.5, high: float = 0.8) -> None:
    """The gate outputs `probability` whatever the question: no feature weights, bias = logit(probability)."""
    gate.weights = {}
    gate.bias = math.log(probability / (1 - probability))
    gate.threshold, gate.high_confidence = threshold, high


def generated(answer="Quillon is 1.4 m tall.", citations=(1,), answerable=True) -> dict:
    return {"reasoning": "From the passages.", "answer": answer, "citations": list(citations),
            "answerable": answerable}


# A selected text (selected-text mode) about what no page of the book holds.
SELECTION = ("The gantry test needs two people. The operator holds the wireless emergency stop, which cuts motor "
             "power in under 50 ms.")


def chat_reply(answer: str, citations: str = "[1]") -> str:
    return (f"[[ ## reasoning ## ]]\nPassage 1 gives the height.\n\n[[ ## answer ## ]]\n{answer}\n\n"
            f"[[ ## citations ## ]]\n{citations}\n\n[[ ## answerable ## ]]\nTrue\n\n[[ ## completed ## ]]")
