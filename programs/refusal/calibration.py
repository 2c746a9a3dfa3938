"""Calibrate a program's refusal gate on labeled questions.

`choose_gate` fits a single cosine cut and the multi-feature logistic gate on train and keeps, of those two and the
shipped default calibration, the one that refuses the most must-refuse dev questions while falsely refusing at most
the policy's `max_false_refusal` of the answerable ones (a richer model only if it measurably beats a simpler one).
Then `off_topic_cut` fits, on dev too, the probability below which a question is off the book's topic: a refusal
above it names the closest sections. Both follow one `RefusalPolicy` (refusal_policy.py).
"""

from __future__ import annotations

import copy

from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.refusal.refusal_gate import RefusalGate, gate_features, refusal_rates
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy

SIMPLEST_FIRST = ("cosine-cut", "default", "logistic")
# Must-refuse categories that are not about the book; a near-miss question is about it, and asks what it lacks.
OFF_TOPIC = ("out-of-scope", "injection")


def gate_examples(program, questions: list[Question], progress: bool | None = None):
    """(features, answerable) for every question that goes through retrieval (`searched`)."""
    rows = searched(questions)
    features, labels = [], []
    with progress_bar("Gate features", len(rows), progress) as bar:
        for q in rows:
            features.append(gate_features(*program.evidence(q.question, q.history)))
            labels.append(q.answerable)
            bar.advance()
    return features, labels


def searched(questions: list[Question]) -> list[Question]:
    """The questions that go through retrieval and the gate: a selected-text question reads only its selection."""
    return [q for q in questions if not q.selected_text]


def calibrate_gate(program, questions: list[Question], progress: bool | None = None,
                   policy: RefusalPolicy = DEFAULT_POLICY) -> None:
    features, labels = gate_examples(program, questions, progress)
    if len(set(labels)) < 2:
        raise ValueError("calibrating the refusal gate needs both answerable and must-refuse questions")
    program.gate.fit(features, labels, policy)


def choose_gate(program, train: list[Question], dev: list[Question], progress: bool | None = None,
                policy: RefusalPolicy = DEFAULT_POLICY, default: RefusalGate | None = None) -> dict:
    """Fit the cosine cut and the logistic gate on train under `policy`; keep the candidate (those two and
    `default`, the shipped default calibration unless given) with the best dev refusal recall among those within the
    policy's `max_false_refusal` on dev, else the fewest false refusals; ties: the simpler. The chosen gate refuses
    under the policy's `min_top_cosine`, and its `off_topic_below` is fitted on dev (`off_topic_cut`), where dev has
    off-topic questions. Sets `program.gate`; returns every candidate's dev figures and the policy."""
    train_features, train_labels = gate_examples(program, train, progress)
    dev_features, dev_labels = gate_examples(program, dev, progress)
    if len(set(train_labels)) < 2:
        raise ValueError("calibrating the refusal gate needs answerable and must-refuse questions in the train split")
    candidates = {
        "cosine-cut": RefusalGate.fit_cosine_cut(train_features, train_labels, policy),
        "default": default or RefusalGate(),
        "logistic": RefusalGate().fit(train_features, train_labels, policy),
    }
    figures = {name: refusal_figures(gate, dev_features, dev_labels) for name, gate in candidates.items()}

    def rank(name: str) -> tuple:
        f = figures[name]
        within = f["false_refusal_rate"] <= policy.max_false_refusal
        return within, f["refusal_recall"] if within else -f["false_refusal_rate"], -SIMPLEST_FIRST.index(name)

    chosen = max(candidates, key=rank)
    # Chosen on this book's labels, so calibrated for it, the default calibration included.
    program.gate.load_state({**candidates[chosen].dump_state(), "calibrated": True,
                             "min_top_cosine": policy.min_top_cosine})
    if (cut := off_topic_cut(program.gate, dev_features, searched(dev), policy)) is not None:
        program.gate.off_topic_below = cut
    return {"chosen": chosen, "threshold": program.gate.threshold, "policy": policy.as_dict(),
            "off_topic_below": program.gate.off_topic_below, "candidates": figures, "state": program.gate.dump_state()}


def off_topic_cut(gate: RefusalGate, features: list[dict], questions: list[Question],
                  policy: RefusalPolicy = DEFAULT_POLICY) -> float | None:
    """The lowest probability cut at which `gate.about_the_book` holds for at most the policy's
    `max_off_topic_pointed` share of the off-topic questions (categories `OFF_TOPIC`): the gate's `off_topic_below`. The lowest such cut names the closest sections
    for the most near-miss questions. None when no question is off-topic: nothing to fit on. `features`: the
    questions' gate features, in their order."""
    off_topic = [f for f, q in zip(features, questions, strict=True) if not q.answerable and q.category in OFF_TOPIC]
    if not off_topic:
        return None
    trial = copy.copy(gate)

    def pointed(cut: float) -> float:
        trial.off_topic_below = cut
        return sum(trial.about_the_book(gate.probability(f), f) for f in off_topic) / len(off_topic)

    cuts = sorted({0.0, 1.0, *(gate.probability(f) for f in features)})
    return next((cut for cut in cuts if pointed(cut) <= policy.max_off_topic_pointed), 1.0)


def refusal_figures(gate: RefusalGate, features: list[dict], answerable: list[bool]) -> dict:
    """A gate's refusal recall, false-refusal rate and their balanced accuracy on labeled features."""
    recall, false_refusal = refusal_rates([gate.probability(f) for f in features], answerable, gate.threshold)
    return {"refusal_recall": round(recall, 4), "false_refusal_rate": round(false_refusal, 4),
            "balanced": round((recall + 1 - false_refusal) / 2, 4)}
