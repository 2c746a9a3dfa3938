"""Compile a BookRAG program: calibrate its refusal gate, compile its predictors, and score it before and after.

The gate is chosen on the dev split between a single cosine cut and the multi-feature logistic gate, both fitted
on train (the issue's rule: the richer model only if it measurably beats the single cut).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dspy

from bookrag.questions import Question
from programs.refusal.calibration import gate_examples
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.refusal.refusal_gate import RefusalGate, refusal_rates
from programs.evaluate.reports import program_report

SCORE_KEYS = ("combined", "answer_accuracy", "refusal_recall", "false_refusal_rate", "citation_validity")


@dataclass
class CompileResult:
    program: dspy.Module
    scores: dict = field(default_factory=dict)  # {"train"|"dev": {"before"|"after": {metric: value}}}
    gate: dict = field(default_factory=dict)  # the chosen gate and every candidate's dev figures
    seconds: float = 0.0


def compile_program(program, train: list[Question], dev: list[Question], optimizer: OptimizerSettings,
                    teacher_lm: dspy.LM | None = None, progress: bool | None = None, say=print) -> CompileResult:
    started = time.perf_counter()
    splits = {"train": train, "dev": dev}
    before = {name: _scores(program, qs, progress) for name, qs in splits.items()}
    say(f"dev before: combined {before['dev']['combined']:.3f}")
    gate = choose_gate(program, train, dev, progress)
    say(f"refusal gate: {gate['chosen']} (dev balanced refusal accuracy {gate['candidates'][gate['chosen']]['balanced']:.3f})")
    compiled = compile_predictors(program, optimizer, train, dev, teacher_lm=teacher_lm)
    compiled.gate.load_state(program.gate.dump_state())  # teleprompters reset every parameter of the student
    after = {name: _scores(compiled, qs, progress) for name, qs in splits.items()}
    say(f"dev after:  combined {after['dev']['combined']:.3f}")
    scores = {name: {"before": before[name], "after": after[name]} for name in splits}
    return CompileResult(compiled, scores, gate, round(time.perf_counter() - started, 1))


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


def _scores(program, questions: list[Question], progress: bool | None) -> dict:
    report = program_report(program, questions, progress=progress)
    return {key: round(report[key], 4) for key in SCORE_KEYS}
