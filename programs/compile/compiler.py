"""Compile a BookRAG program: calibrate its refusal gate, compile the candidates, and keep the best on dev.

The gate is calibrated by programs/refusal/calibration.py (`choose_gate`) and kept by every candidate; the
candidates are programs/compile/candidates.py's, scored on dev by successive halving (halving.py) and chosen by the
paired bootstrap rule (selection.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import dataclass, field

import dspy

from bookrag.questions import Question
from programs.compile.candidates import Candidate, candidates
from programs.compile.halving import ScoredCandidate, score_candidates
from programs.compile.optimizers import OptimizerSettings, compile_predictors
from programs.compile.selection import Selection, SelectionRule, choose_candidate
from programs.evaluate.figures import CANDIDATE_FIGURES, SCORES
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.reports import aggregate
from programs.refusal.calibration import choose_gate
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy


@dataclass
class CompileResult:
    program: dspy.Module  # the kept candidate
    scores: dict = field(default_factory=dict)  # {"dev": {"before": zero-shot's figures, "after": the kept one's}}
    gate: dict = field(default_factory=dict)  # the chosen gate, every candidate's dev figures and the policy
    selection: dict = field(default_factory=dict)  # the manifest's record: every candidate, the kept one and why
    candidates: list[ScoredCandidate] = field(default_factory=list)
    seconds: float = 0.0


def compile_program(program, train: list[Question], dev: list[Question], optimizer: OptimizerSettings,
                    teacher_lm: dspy.LM | None = None, progress: bool | None = None, *, say: Callable[[str], None],
                    rule: SelectionRule | None = None, policy: RefusalPolicy = DEFAULT_POLICY) -> CompileResult:
    """Calibrate the gate under `policy` (train, chosen on dev), compile each candidate (train), score them on dev
    by successive halving, and keep the simplest that no other beats outside noise (`rule`; default: seeded with the
    optimizer's seed). `program` itself, with the calibrated gate, is the zero-shot candidate. `say` gets each step's
    line for the user (the caller shows it, or not).

    Train is not scored: with a local model every scored question is an LM call (~10 s), and dev is the split the
    candidates are compared on."""
    started = time.perf_counter()
    rule = rule or SelectionRule(seed=optimizer.seed)
    gate = choose_gate(program, train, dev, progress, policy)
    say(f"refusal gate: {gate['chosen']} (dev balanced refusal accuracy {gate['candidates'][gate['chosen']]['balanced']:.3f})")
    built = []
    for candidate in candidates(optimizer):
        if candidate.settings is not None:
            say(f"compiling {candidate.description} ...")
        built.append((candidate, _build(candidate, program, train, dev, teacher_lm, say)))
    scored = score_candidates(built, dev, rule, progress, say=say)
    selection = choose_candidate({s.name: s.scores for s in scored if s.dropped is None}, rule)
    kept = next(s for s in scored if s.name == selection.chosen)
    scores = {"dev": {"before": _figures(scored[0].rows, SCORES), "after": _figures(kept.rows, SCORES)}}
    return CompileResult(kept.program, scores, gate, _record(selection, scored, rule), scored,
                         round(time.perf_counter() - started, 1))


def verdict(selection: dict) -> str:
    """The terminal's plain line on what was kept (`selection`: the manifest's record)."""
    kept_zero_shot = selection["chosen"] == selection["candidates"][0]["name"]
    if kept_zero_shot and len(selection["candidates"]) > 1:
        return "Compiling did not beat zero-shot on dev: kept the zero-shot program (with this book's refusal gate)."
    if kept_zero_shot:
        return "No compiled candidate to try: kept the zero-shot program (with this book's refusal gate)."
    return f"Compiling beat zero-shot on dev: kept {selection['chosen']} (with this book's refusal gate)."


def _record(selection: Selection, scored: list[ScoredCandidate], rule: SelectionRule) -> dict:
    """The manifest's `selection`: the rule, every candidate's dev figures and status, the comparisons, the kept
    one and why."""
    return {
        "chosen": selection.chosen,
        "reason": _reason(selection, scored),
        "rule": rule.as_dict(),
        "candidates": [{"name": s.name, "status": _status(s, selection.chosen), **_figures(s.rows, CANDIDATE_FIGURES),
                        "dropped": {**s.dropped.as_dict(), "futile": s.futile} if s.dropped else None}
                       for s in scored],
        "comparisons": [c.as_dict() for c in selection.comparisons],
    }


def _figures(rows: list[QuestionRow], names: tuple[str, ...]) -> dict:
    """The figures `names` (figures.py: SCORES or CANDIDATE_FIGURES) over the dev questions scored."""
    report = aggregate(rows)
    return {name: round(report[name], 4) for name in names}


def _build(candidate: Candidate, program, train: list[Question], dev: list[Question], teacher_lm: dspy.LM | None,
           say: Callable[[str], None]):
    """The candidate's program: `program` itself for zero-shot, else a compiled copy with `program`'s gate."""
    if candidate.settings is None:
        return program
    with redirect_stdout(sys.stderr):  # DSPy's teleprompters print their tallies; stdout is for --json
        compiled = compile_predictors(program, candidate.settings, train, dev, teacher_lm=teacher_lm, say=say)
    compiled.gate.load_state(program.gate.dump_state())  # teleprompters reset every parameter of the student
    return compiled


def _reason(selection: Selection, scored: list[ScoredCandidate]) -> str:
    """The selection's reason, with the candidates successive halving dropped before it."""
    dropped = [f"{s.name} dropped after the dev subset{', no better than zero-shot' if s.futile else ''} "
               f"({s.dropped.brief()})" for s in scored if s.dropped]
    if not dropped:
        return selection.reason
    if not selection.comparisons:  # every other candidate was dropped
        return f"{selection.chosen} kept: " + "; ".join(dropped)
    return "; ".join([selection.reason, *dropped])


def _status(scored: ScoredCandidate, chosen: str) -> str:
    if scored.dropped is not None:
        return "dropped"  # after the dev subset
    return "kept" if scored.name == chosen else "not kept"
