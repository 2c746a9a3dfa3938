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


@dataclass(frozen=True)
class Compilation:
    """One optimizer's work: the program whose predictors it compiles, its settings, the labeled questions, the
    teacher LM (None: the program's own), and `say` for the lines of a training."""

    program: dspy.Module
    settings: OptimizerSettings
    train: list[Question]
    dev: list[Question]
    teacher_lm: dspy.LM | None
    say: Callable[[str], None]

    def trainset(self) -> list[dspy.Example]:
        return [q.to_example() for q in traceable(self.program, self.train, self.settings.seed)]

    def valset(self) -> list[dspy.Example]:
        return [q.to_example() for q in self.dev]

    def teacher(self) -> dspy.Module | None:
        """The program answering with the teacher LM, None without one (the student teaches itself)."""
        if self.teacher_lm is None:
            return None
        teacher = self.program.deepcopy()
        teacher.lm = self.teacher_lm
        return teacher


def labeled(job: Compilation) -> dspy.Module:
    compiled = job.program.deepcopy()
    demos = labeled_demos(job.program, job.train)
    compiled.generate = LabeledFewShot(k=job.settings.max_demos).compile(job.program.generate, trainset=demos)
    return compiled


def bootstrap(job: Compilation) -> dspy.Module:
    # Labeled demos would be raw questions without passages or citations: bootstrapped traces only.
    optimizer = BootstrapFewShot(metric=combined_score, max_bootstrapped_demos=job.settings.max_demos,
                                 max_labeled_demos=0)
    return optimizer.compile(job.program, teacher=job.teacher(), trainset=job.trainset())


def random_search(job: Compilation) -> dspy.Module:
    optimizer = BootstrapFewShotWithRandomSearch(
        metric=combined_score, max_bootstrapped_demos=job.settings.max_demos, max_labeled_demos=0,
        num_candidate_programs=6, num_threads=job.settings.threads,
    )
    return optimizer.compile(job.program, teacher=job.teacher(), trainset=job.trainset(), valset=job.valset())


def mipro(job: Compilation) -> dspy.Module:
    program, settings = job.program, job.settings
    optimizer = MIPROv2(metric=combined_score, prompt_model=job.teacher_lm or program.lm, task_model=program.lm,
                        auto="light", num_threads=settings.threads, seed=settings.seed,
                        max_bootstrapped_demos=settings.max_demos, max_labeled_demos=0)
    return optimizer.compile(program, teacher=job.teacher(), trainset=job.trainset(), valset=job.valset())


def gepa(job: Compilation) -> dspy.Module:
    optimizer = GEPA(metric=feedback_score, auto="light", reflection_lm=job.teacher_lm or job.program.lm,
                     num_threads=job.settings.threads, seed=job.settings.seed)
    return optimizer.compile(job.program, trainset=job.trainset(), valset=job.valset())


def finetune(job: Compilation) -> dspy.Module:
    """The program answering through a LoRA adapter trained on the train questions (programs/compile/finetune.py);
    its LM's adapter carries the training's record, for the manifest."""
    from programs.compile.finetune import ReaderFinetune

    settings = job.settings
    if settings.finetune is None or settings.training_dir is None:  # no folder relative to the working directory
        raise ValueError("the finetune optimizer needs OptimizerSettings.finetune and .training_dir")
    return ReaderFinetune(settings.finetune, settings.training_dir, say=job.say).compile(job.program, job.train)


# Each optimizer's name (optimize.py --optimizer) -> what compiles with it; adding one is one entry.
OPTIMIZERS: dict[str, Callable[[Compilation], dspy.Module]] = {
    "bootstrap": bootstrap, "labeled": labeled, "random-search": random_search, "mipro": mipro, "gepa": gepa,
    "finetune": finetune,
}


def compile_predictors(program, settings: OptimizerSettings, train: list[Question], dev: list[Question],
                       teacher_lm: dspy.LM | None = None, *, say: Callable[[str], None]):
    """A copy of `program` whose predictors' instructions and demos are compiled by `settings.name`; `say` gets the
    lines for the user of a training (finetune)."""
    if settings.name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {settings.name!r}: choose one of {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[settings.name](Compilation(program, settings, train, dev, teacher_lm, say))


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
