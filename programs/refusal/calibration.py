"""Calibrate a program's refusal gate on labeled questions.

`choose_gate` fits a single cosine cut and the multi-feature logistic gate on train and keeps, of those two and the
shipped default calibration, the one that refuses the most must-refuse dev questions while falsely refusing at most
`MAX_FALSE_REFUSAL` of the answerable ones (a richer model only if it measurably beats a simpler one).
"""

from __future__ import annotations

from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.refusal.refusal_gate import MAX_FALSE_REFUSAL, RefusalGate, gate_features, refusal_rates

SIMPLEST_FIRST = ("cosine-cut", "default", "logistic")


def gate_examples(program, questions: list[Question], progress: bool | None = None):
    """(features, answerable) for every question that goes through retrieval."""
    rows = [q for q in questions if not q.selected_text]
    features, labels = [], []
    with progress_bar("Gate features", len(rows), progress) as bar:
        for q in rows:
            features.append(gate_features(*program.gate_evidence(q.question, q.history)))
            labels.append(q.answerable)
            bar.advance()
    return features, labels


def calibrate_gate(program, questions: list[Question], progress: bool | None = None) -> None:
    features, labels = gate_examples(program, questions, progress)
    if len(set(labels)) < 2:
        raise ValueError("calibrating the refusal gate needs both answerable and must-refuse questions")
    program.gate.fit(features, labels)


def choose_gate(program, train: list[Question], dev: list[Question], progress: bool | None = None,
                max_false_refusal: float = MAX_FALSE_REFUSAL, default: RefusalGate | None = None) -> dict:
    """Fit the cosine cut and the logistic gate on train; keep the candidate (those two and `default`, the shipped
    default calibration unless given) with the best dev refusal recall among those within `max_false_refusal` on
    dev, else the fewest false refusals; ties: the simpler. Sets `program.gate`; returns every candidate's dev
    figures."""
    train_features, train_labels = gate_examples(program, train, progress)
    dev_features, dev_labels = gate_examples(program, dev, progress)
    if len(set(train_labels)) < 2:
        raise ValueError("calibrating the refusal gate needs answerable and must-refuse questions in the train split")
    candidates = {
        "cosine-cut": RefusalGate.fit_cosine_cut(train_features, train_labels, max_false_refusal),
        "default": default or RefusalGate(),
        "logistic": RefusalGate().fit(train_features, train_labels, max_false_refusal=max_false_refusal),
    }
    figures = {name: refusal_figures(gate, dev_features, dev_labels) for name, gate in candidates.items()}

    def rank(name: str) -> tuple:
        f = figures[name]
        within = f["false_refusal_rate"] <= max_false_refusal
        return within, f["refusal_recall"] if within else -f["false_refusal_rate"], -SIMPLEST_FIRST.index(name)

    chosen = max(candidates, key=rank)
    # Chosen on this book's labels, so calibrated for it, the default calibration included.
    program.gate.load_state({**candidates[chosen].dump_state(), "calibrated": True})
    return {"chosen": chosen, "threshold": program.gate.threshold, "max_false_refusal": max_false_refusal,
            "candidates": figures, "state": program.gate.dump_state()}


def refusal_figures(gate: RefusalGate, features: list[dict], answerable: list[bool]) -> dict:
    """A gate's refusal recall, false-refusal rate and their balanced accuracy on labeled features."""
    recall, false_refusal = refusal_rates([gate.probability(f) for f in features], answerable, gate.threshold)
    return {"refusal_recall": round(recall, 4), "false_refusal_rate": round(false_refusal, 4),
            "balanced": round((recall + 1 - false_refusal) / 2, 4)}
