"""The refusal gate's shipped default calibration (programs/refusal/default_calibration.json), rebuilt: the logistic
gate fitted under a `RefusalPolicy` on every labeled book's train split, its off-topic band on their dev splits, with
the program's own retrieval (MiniLM, no reranker) and no LM. `make calibration` runs it (programs/cli/calibrate.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, PROJECT_ROOT, Settings
from bookrag.questions import Question, load_questions
from programs.compile.artifact import project_relative
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import gate_examples, off_topic_cut, searched
from programs.refusal.default_calibration import DEFAULT_CALIBRATION, write_default_calibration
from programs.refusal.refusal_gate import CALIBRATED_FEATURES, RefusalGate
from programs.refusal.refusal_policy import RefusalPolicy
from retrievers import BookIndex

CORPORA = PROJECT_ROOT.parent / "shared" / "corpora"
LABELED_BOOKS = {  # name: (book folder, question set); each has train/dev/test splits
    "bundled": (BUNDLED_BOOK, BUNDLED_QUESTIONS),
    "book-a": (CORPORA / "physical-ai-book-a", PROJECT_ROOT / "datasets" / "physical-ai-book-a.csv"),
    "fastapi": (CORPORA / "fastapi-tutorial", PROJECT_ROOT / "datasets" / "fastapi-tutorial.csv"),
}


@dataclass(frozen=True)
class GateExample:
    question: Question
    features: dict[str, float]


def book_gate_examples(data_dir: Path, book: Path, questions: Path) -> list[GateExample]:
    """Every question of the set that goes through retrieval, with its gate features (the book is ingested first:
    a no-op when it is indexed and unchanged)."""
    rows = searched(load_questions(questions))
    with BookIndex(Settings(data_dir=data_dir, book_dir=book)) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        features, _ = gate_examples(program, rows, progress=False)
    return [GateExample(q, f) for q, f in zip(rows, features, strict=True)]


def fit_default_gate(examples: list[GateExample], policy: RefusalPolicy) -> RefusalGate:
    """The gate fitted under `policy` on the train examples, its off-topic band on the dev ones."""
    train = [e for e in examples if e.question.split == "train"]
    dev = [e for e in examples if e.question.split == "dev"]
    gate = RefusalGate().fit([e.features for e in train], [e.question.answerable for e in train], policy)
    gate.off_topic_below = off_topic_cut(gate, [e.features for e in dev], [e.question for e in dev], policy) or 0.0
    return gate


def rebuild_default_calibration(data_dir: Path, policy: RefusalPolicy, say: Callable[[str], None],
                                path: Path = DEFAULT_CALIBRATION) -> Path:
    """Fit the default gate on every labeled book (`LABELED_BOOKS`) and write it, with what it was fitted on, to
    `path`."""
    books = {}
    for name, (book, questions) in LABELED_BOOKS.items():
        say(f"{name}: gate features of {project_relative(questions)} ...")
        books[name] = book_gate_examples(data_dir, book, questions)
    gate = fit_default_gate([e for examples in books.values() for e in examples], policy)
    provenance = {
        "about": "Refusal gate fitted on every labeled train split; the zero-shot program's gate. Cosines are "
                 "MiniLM's (all-MiniLM-L6-v2): with another embedder, compile (optimize.py) for a fitted gate.",
        "command": "make calibration",
        "embedder": "minilm384",
        "features": list(CALIBRATED_FEATURES),
        "policy": policy.as_dict(),
        "fitted_on": [_fitted_on(LABELED_BOOKS[name][1], examples) for name, examples in books.items()],
    }
    return write_default_calibration(gate.dump_state(), provenance, path)


def _fitted_on(questions: Path, examples: list[GateExample]) -> dict:
    """A question set's train split as the default was fitted on it: the file, its sha256, the counts."""
    train = [e.question for e in examples if e.question.split == "train"]
    return {"questions": project_relative(questions), "split": "train",
            "sha256": hashlib.sha256(questions.read_bytes()).hexdigest(),
            "answerable": sum(q.answerable for q in train), "must_refuse": sum(not q.answerable for q in train)}
