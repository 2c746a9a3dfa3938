"""Calibrate a program's refusal gate on labeled questions.

`choose_gate` fits a single cosine cut and the multi-feature logistic gate on train and keeps the one with the
better balanced refusal accuracy on dev (the richer model only if it measurably beats the single cut).
"""

from __future__ import annotations

from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.refusal.refusal_gate import RefusalGate, gate_features, refusal_rates


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


def choose_gate(program, train: list[Question], dev: list[Question], progress: bool | None = None) -> dict:
    """Fit both gates on train, keep the one with the better balanced refusal accuracy on dev (ties: the simpler
    cut). Sets `program.gate` and returns the candidates' dev figures."""
    train_features, train_labels = gate_examples(program, train, progress)
    dev_features, dev_labels = gate_examples(program, dev, progress)
    if len(set(train_labels)) < 2:
        raise ValueError("calibrating the refusal gate needs answerable and must-refuse questions in the train split")
    candidates = {
        "cosine-cut": RefusalGate.fit_cosine_cut(train_features, train_labels),
        "logistic": RefusalGate().fit(train_features, train_labels),
    }
    figures = {name: refusal_figures(gate, dev_features, dev_labels) for name, gate in candidates.items()}
    chosen = max(candidates, key=lambda name: (figures[name]["balanced"], name == "cosine-cut"))
    program.gate.load_state(candidates[chosen].dump_state())
    return {"chosen": chosen, "threshold": program.gate.threshold, "candidates": figures,
            "state": program.gate.dump_state()}


def refusal_figures(gate: RefusalGate, features: list[dict], answerable: list[bool]) -> dict:
    """A gate's refusal recall, false-refusal rate and their balanced accuracy on labeled features."""
    recall, false_refusal = refusal_rates([gate.probability(f) for f in features], answerable, gate.threshold)
    return {"refusal_recall": round(recall, 4), "false_refusal_rate": round(false_refusal, 4),
            "balanced": round((recall + 1 - false_refusal) / 2, 4)}
