"""Compile a BookRAG program: calibrate its refusal gate, compile its predictors, and score it before and after.

The gate is calibrated by programs/refusal/calibration.py (`choose_gate`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dspy

from bookrag.questions import Question
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.evaluate.reports import program_report
from programs.refusal.calibration import choose_gate

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


def _scores(program, questions: list[Question], progress: bool | None) -> dict:
    report = program_report(program, questions, progress=progress)
    return {key: round(report[key], 4) for key in SCORE_KEYS}
