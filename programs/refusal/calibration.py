"""Calibrate a program's refusal gate on labeled questions (the train split)."""

from __future__ import annotations

from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.refusal.refusal_gate import gate_features


def gate_examples(program, questions: list[Question], progress: bool | None = None):
    """(features, answerable) for every question that goes through retrieval."""
    rows = [q for q in questions if not q.selected_text]
    features, labels = [], []
    with progress_bar("Gate features", len(rows), progress) as bar:
        for q in rows:
            query = program.standalone_query(q.question, q.history)
            passages = program.retriever.search(query, k=program.k, mode=program.search_mode)
            features.append(gate_features(query, passages))
            labels.append(q.answerable)
            bar.advance()
    return features, labels


def calibrate_gate(program, questions: list[Question], progress: bool | None = None) -> None:
    features, labels = gate_examples(program, questions, progress)
    if len(set(labels)) < 2:
        raise ValueError("calibrating the refusal gate needs both answerable and must-refuse questions")
    program.gate.fit(features, labels)
