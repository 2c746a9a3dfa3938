"""The DSPy teleprompters `optimize.py` can compile BookRAG's predictors with.

The teleprompters compile the program's predictors (`rewrite`, `generate`, and the query expander's when one is on)
against `combined_score` (GEPA against its feedback variant); `labeled` sets demos on `generate` only, made from the
labeled answers. The refusal gate is calibrated separately (programs/compile/compiler.py): teleprompters reset every
parameter of the student, so the compiler puts the calibrated gate back afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass

import dspy
from dspy.teleprompt import GEPA, BootstrapFewShot, BootstrapFewShotWithRandomSearch, LabeledFewShot, MIPROv2

from bookrag.config import REFUSAL_MESSAGE, AnswerMode
from bookrag.questions import Question
from programs.compile.finetune_settings import FinetuneSettings
from programs.evaluate.metrics import combined_score, feedback_score

OPTIMIZERS = ("bootstrap", "labeled", "random-search", "mipro", "gepa", "finetune")
# Why bootstrap, and why the search optimizers were not run locally: docs/decisions.md (2026-11-23).
DEFAULT_OPTIMIZER = "bootstrap"


@dataclass(frozen=True)
class OptimizerSettings:
    name: str = DEFAULT_OPTIMIZER
    max_demos: int = 4
    threads: int = 1
    seed: int = 0
    teacher_lm: str | None = None  # recorded by name; the dspy.LM itself is passed to `compile_predictors`
    finetune: FinetuneSettings | None = None  # the finetune optimizer's training; None for the others
    training_dir: str | None = None  # finetune: finetune_settings.training_folder, for the book

    def as_dict(self) -> dict:
        return {**asdict(self), "finetune": self.finetune and self.finetune.as_dict()}


def answer_mode_conflict(optimizer: str, answer_mode: str) -> str | None:
    """Why `optimizer` would compile nothing a program answering in `answer_mode` uses; None when it would."""
    if optimizer == "finetune" and answer_mode == AnswerMode.EXTRACTIVE:
        return ("the finetune optimizer trains the reader that writes generated answers, and extractive answers are "
                "the book's own sentences: the trained reader would never answer")
    return None


def compile_predictors(program, settings: OptimizerSettings, train: list[Question], dev: list[Question],
                       teacher_lm: dspy.LM | None = None, *, say: Callable[[str], None]):
    """A copy of `program` whose predictors' instructions and demos are compiled by `settings.name`; `say` gets the
    lines for the user of a training (finetune)."""
    trainset = [q.to_example() for q in traceable(program, train, settings.seed)]
    valset = [q.to_example() for q in dev]
    if settings.name == "labeled":
        compiled = program.deepcopy()
        demos = labeled_demos(program, train)
        compiled.generate = LabeledFewShot(k=settings.max_demos).compile(program.generate, trainset=demos)
        return compiled
    teacher = None
    if teacher_lm is not None:
        teacher = program.deepcopy()
        teacher.lm = teacher_lm
    if settings.name == "bootstrap":
        # Labeled demos would be raw questions without passages or citations: bootstrapped traces only.
        optimizer = BootstrapFewShot(metric=combined_score, max_bootstrapped_demos=settings.max_demos,
                                     max_labeled_demos=0)
        return optimizer.compile(program, teacher=teacher, trainset=trainset)
    if settings.name == "random-search":
        optimizer = BootstrapFewShotWithRandomSearch(
            metric=combined_score, max_bootstrapped_demos=settings.max_demos, max_labeled_demos=0,
            num_candidate_programs=6, num_threads=settings.threads,
        )
        return optimizer.compile(program, teacher=teacher, trainset=trainset, valset=valset)
    if settings.name == "mipro":
        optimizer = MIPROv2(metric=combined_score, prompt_model=teacher_lm or program.lm, task_model=program.lm,
                            auto="light", num_threads=settings.threads, seed=settings.seed,
                            max_bootstrapped_demos=settings.max_demos, max_labeled_demos=0)
        return optimizer.compile(program, teacher=teacher, trainset=trainset, valset=valset)
    if settings.name == "finetune":
        return finetune(program, settings, train, say)
    if settings.name == "gepa":
        optimizer = GEPA(metric=feedback_score, auto="light", reflection_lm=teacher_lm or program.lm,
                         num_threads=settings.threads, seed=settings.seed)
        return optimizer.compile(program, trainset=trainset, valset=valset)
    raise ValueError(f"unknown optimizer {settings.name!r}: choose one of {', '.join(OPTIMIZERS)}")


def finetune(program, settings: OptimizerSettings, train: list[Question], say: Callable[[str], None]):
    """The program answering through a LoRA adapter trained on `train` (programs/compile/finetune.py); its LM's
    adapter carries the training's record, for the manifest."""
    from programs.compile.finetune import ReaderFinetune

    if settings.finetune is None or settings.training_dir is None:  # no folder relative to the working directory
        raise ValueError("the finetune optimizer needs OptimizerSettings.finetune and .training_dir")
    return ReaderFinetune(settings.finetune, settings.training_dir, say=say).compile(program, train)


def traceable(program, questions: list[Question], seed: int) -> list[Question]:
    """The questions a bootstrap trace can come from, shuffled by `seed` (the files are ordered by topic, and
    demos from one chapter teach less): answerable ones, and must-refuse ones the gate lets through to the LM,
    whose traces demonstrate a refusal. A must-refuse question the gate refuses runs no predictor: as a "success"
    with no trace it would only use up the bootstrap's budget."""
    kept = [q for q in questions
            if q.answerable or q.selected_text or program.gate(*program.evidence(q.question, q.history))[0]]
    random.Random(seed).shuffle(kept)
    return kept


def labeled_demos(program, questions: list[Question]) -> list[dspy.Example]:
    """`AnswerWithCitations` demos from labeled questions: the reader's inputs as `forward` sends them
    (`BookRAG.reader_inputs`), the reference answer, the shown passages from a gold source as citations; must-refuse
    questions demonstrate the refusal."""
    demos = []
    for q in questions:
        if q.selected_text or (q.answerable and not (q.reference_answer and q.gold_sources)):
            continue
        query, passages = program.evidence(q.question, q.history)
        inputs = program.reader_inputs(q.question, query, passages, q.history)
        shown = {number for number, _ in inputs.sentences}
        citations = [n for n, p in enumerate(passages, start=1) if p.source in q.gold_sources and n in shown]
        if q.answerable and not citations:
            continue  # the context shows no passage of the gold page: no honest demo to make from it
        demos.append(dspy.Example(
            **inputs.fields(), answer=q.reference_answer if q.answerable else REFUSAL_MESSAGE,
            citations=citations if q.answerable else [], answerable=q.answerable,
        ).with_inputs("context", "question", "history"))
    return demos
