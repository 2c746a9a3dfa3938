"""Compile a BookRAG program: calibrate its refusal gate, compile its predictors, and score it before and after.

The gate is calibrated by programs/refusal/calibration.py (`choose_gate`).
"""

from __future__ import annotations

import sys
import time
from contextlib import redirect_stdout
from dataclasses import dataclass, field

import dspy

from bookrag.questions import Question
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.evaluate.reports import program_report
from programs.refusal.calibration import choose_gate

SCORE_KEYS = ("combined", "token_f1", "answer_words_p50", "answer_accuracy", "refusal_recall", "false_refusal_rate",
              "citation_validity", "parse_failure_rate")


@dataclass
class CompileResult:
    program: dspy.Module
    scores: dict = field(default_factory=dict)  # {"dev": {"before"|"after": {metric: value}}}
    gate: dict = field(default_factory=dict)  # the chosen gate and every candidate's dev figures
    seconds: float = 0.0


def compile_program(program, train: list[Question], dev: list[Question], optimizer: OptimizerSettings,
                    teacher_lm: dspy.LM | None = None, progress: bool | None = None, say=print) -> CompileResult:
    """Score dev, calibrate the gate (train, chosen on dev), compile the predictors (train), score dev again.

    Train is not scored: with a local model every scored question is an LM call (~10 s), and dev is the split the
    before/after comparison is read on."""
    started = time.perf_counter()
    before = _scores(program, dev, progress)
    say(f"dev before: combined {before['combined']:.3f}, token F1 {before['token_f1']:.3f}")
    gate = choose_gate(program, train, dev, progress)
    say(f"refusal gate: {gate['chosen']} (dev balanced refusal accuracy {gate['candidates'][gate['chosen']]['balanced']:.3f})")
    with redirect_stdout(sys.stderr):  # DSPy's teleprompters print their tallies; stdout is for --json
        compiled = compile_predictors(program, optimizer, train, dev, teacher_lm=teacher_lm)
    compiled.gate.load_state(program.gate.dump_state())  # teleprompters reset every parameter of the student
    after = _scores(compiled, dev, progress)
    say(f"dev after:  combined {after['combined']:.3f}, token F1 {after['token_f1']:.3f}")
    return CompileResult(compiled, {"dev": {"before": before, "after": after}}, gate,
                         round(time.perf_counter() - started, 1))


def _scores(program, questions: list[Question], progress: bool | None) -> dict:
    report = program_report(program, questions, progress=progress)
    return {key: round(report[key], 4) for key in SCORE_KEYS}
