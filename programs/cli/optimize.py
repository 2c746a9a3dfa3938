"""Compile the BookRAG program against a labeled question set and write it to `artifacts/<name>/`.

    python optimize.py [--optimizer labeled|bootstrap|random-search|mipro|gepa|finetune] [--book DIR]
                       [--questions FILE] [--lm MODEL] [--teacher-lm MODEL] [--answer-mode generated|extractive]
                       [--out DIR] [--max-demos N] [--max-false-refusal SHARE] [--epochs N] [--examples N|all]
                       [--minutes M] [--[no-]frozen-int8] [--[no-]bootstrap] [--threads N] [--seed N] [--json]
                       [--verbose]

Calibrates the refusal gate and compiles candidate programs on the train split, scores them on dev, keeps the
zero-shot program unless a compiled one beats it outside noise, and writes `program.json` + `manifest.json`
atomically: a killed run leaves the previous artifact intact.
A book other than the bundled one with no `--questions` gets a synthetic set written from the book, saved beside
the artifact as `<artifact>-questions.csv` (programs/compile/synthetic_questions.py).
--out must be new, empty or an artifact of ours and nothing else, outside the book (checked before any work): nothing
else is ever replaced. A symbolic link is written through (the folder it names is replaced, the link kept).
Exit codes: 0 written, 2 configuration error, 3 store/embedding/LM error, 4 bad arguments, question file or an --out
it may not write.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from bookrag.cli import ArgumentParser, load_settings, notice, run, setup_logging, user_path
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, book_name
from bookrag.errors import DatasetError, ExitCode


def main(argv: list[str] | None = None) -> int:
    from bookrag.output_folder import OutputFolder
    from programs.cli.training_flags import training_flags_given
    from programs.compile.artifact import ARTIFACT_OUTPUT, MAX_DEMOS
    from programs.compile.optimizers import answer_mode_conflict

    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.max_demos <= MAX_DEMOS or args.threads < 1 or args.epochs < 1:
        parser.error(f"--max-demos must be from 0 to {MAX_DEMOS}, and --threads and --epochs at least 1")
    if args.optimizer != "finetune" and (ignored := training_flags_given(args)):
        parser.error(f"{', '.join(ignored)} set how the reader is trained: they apply to --optimizer finetune only, "
                     f"not to --optimizer {args.optimizer}")
    setup_logging(args.verbose)
    settings = load_settings(book_dir=args.book, lm=args.lm, answer_mode=args.answer_mode)
    if conflict := answer_mode_conflict(args.optimizer, settings.answer_mode):
        given = "--answer-mode " if args.answer_mode else "BOOKRAG_ANSWER_MODE="
        parser.error(f"--optimizer {args.optimizer} with {given}{settings.answer_mode}: {conflict}; answer in "
                     "generated mode (--answer-mode generated), or choose another --optimizer")
    out = args.out or settings.artifacts_dir / book_name(settings.book_dir)
    named = "--out" if args.out else "the artifact folder under BOOKRAG_ARTIFACTS_DIR"
    OutputFolder(out, ARTIFACT_OUTPUT, named).claim(settings)  # a folder we may not replace fails now, not after the run
    if args.optimizer == "finetune":
        from programs.compile.finetune import check_can_train

        check_can_train(settings)
    manifest = compile_artifact(args, settings, out, say=(lambda *_: None) if args.json else print)
    if args.json:
        print(json.dumps(manifest))
    else:
        _print_selection(manifest)
        print(f"Wrote {out}/ (program.json, manifest.json) in {manifest['duration_s']} s")
    return ExitCode.OK


def build_parser() -> ArgumentParser:
    from programs.cli.refusal_flags import add_refusal_arguments
    from programs.cli.training_flags import add_training_arguments
    from programs.compile.artifact import MAX_DEMOS
    from programs.compile.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS, OptimizerSettings

    max_demos = OptimizerSettings().max_demos
    parser = ArgumentParser(description="Compile the bookrag program against labeled questions.")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default=DEFAULT_OPTIMIZER,
                        help=f"DSPy teleprompter for the predictors (default {DEFAULT_OPTIMIZER}; see README)")
    parser.add_argument("--questions", type=user_path,
                        help="labeled CSV/JSONL question set (default: the bundled set for the bundled book; for "
                             "another book, a synthetic set written from the book beside the artifact)")
    parser.add_argument("--teacher-lm", help="LM that bootstraps demos / proposes instructions (default: --lm)")
    parser.add_argument("--out", type=user_path, help="artifact folder (default: artifacts/<book name>/)")
    parser.add_argument("--max-demos", type=int, default=max_demos,
                        help=f"most demos per predictor (at most {MAX_DEMOS}); bootstrap and labeled also try half as many "
                             f"(default {max_demos})")
    add_refusal_arguments(parser)
    add_training_arguments(parser, prefix="finetune: ")
    parser.add_argument("--threads", type=int, default=1, help="parallel LM calls while compiling (default 1)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed for the optimizers, the dev subset and the selection's bootstrap (default 0)")
    parser.add_program_arguments(json_help="print the manifest as JSON on stdout, nothing else")
    return parser


def compile_artifact(args, settings, out: Path, say) -> dict:
    """Compile on the question set (written from the book when it has none), write the artifact to `out`, and
    return its manifest."""
    from programs.cli.refusal_flags import refusal_policy
    from programs.compile.artifact import build_manifest, dataset_record, write_artifact
    from programs.compile.candidates import candidates
    from programs.compile.compiler import compile_program
    from programs.lm.language_model import make_lm
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    progress = False if args.json else None
    lm = make_lm(settings)
    questions_path = args.questions or _default_questions(settings.book_dir)
    synthetic = questions_path is None
    if synthetic:
        questions_path = _synthetic_questions(settings, lm, out, progress, say)
    train, dev = _train_and_dev(questions_path)
    random.seed(args.seed)
    optimizer = optimizer_settings(args, settings)
    started = time.time()
    with BookIndex(settings) as index:
        report = index.update(notice, progress, reread=True)  # incremental: a no-op when unchanged
        say(f"Index {index.collection}: {report.summary()}")
        program = BookRAG.from_settings(settings, index, lm=lm)
        teacher = make_lm(settings.replace(lm=args.teacher_lm)) if args.teacher_lm else None
        say(f"Compiling with {args.optimizer} on {len(train)} train questions "
            f"({'generated' if program.generates else 'extractive'} answers, LM {settings.lm}); dev: {len(dev)}; "
            f"candidates: {', '.join(c.name for c in candidates(optimizer))}")
        result = compile_program(program, train, dev, optimizer, teacher_lm=teacher, progress=progress, say=say,
                                 policy=refusal_policy(args))
        dataset = dataset_record(questions_path, len(train), len(dev), synthetic)
        manifest = build_manifest(settings, index, result, optimizer, dataset, started)
        write_artifact(result.program, out, manifest, settings.data_dir)
    return manifest


def optimizer_settings(args, settings):
    """The compile's OptimizerSettings (the manifest's `optimizer`); the finetune optimizer's training, and its
    folder under BOOKRAG_DATA_DIR/training/, from the training flags."""
    from programs.cli.training_flags import finetune_settings
    from programs.compile.finetune_settings import training_folder
    from programs.compile.optimizers import OptimizerSettings

    if args.optimizer != "finetune":
        return OptimizerSettings(args.optimizer, args.max_demos, args.threads, args.seed, args.teacher_lm)
    return OptimizerSettings(args.optimizer, args.max_demos, args.threads, args.seed, args.teacher_lm,
                             finetune_settings(args), str(training_folder(settings, book_name(settings.book_dir))))


def _synthetic_questions(settings, lm, out: Path, progress: bool | None, say) -> Path:
    """A book nobody labeled: questions written from the book itself, kept beside the artifact."""
    from programs.compile.synthetic_questions import synthetic_question_file, synthetic_questions_path
    from retrievers import BookIndex

    with BookIndex(settings) as index:
        index.ingest(progress=progress)
        return synthetic_question_file(index, lm, synthetic_questions_path(out), progress, say=say)


def _train_and_dev(questions_path: Path) -> tuple[list, list]:
    """The train and dev questions; both are needed, and train needs both kinds to fit the refusal gate on."""
    from bookrag.questions import load_questions

    questions = load_questions(questions_path)
    train = [q for q in questions if q.split == "train"]
    dev = [q for q in questions if q.split == "dev"]
    if not train or not dev:
        raise DatasetError(f"{questions_path} needs questions in both the train and dev splits")
    if len({q.answerable for q in train}) < 2:  # the refusal gate is fitted on both kinds
        raise DatasetError(f"{questions_path} needs answerable and must-refuse (answerable=false) questions in "
                           "its train split to calibrate the refusal gate")
    return train, dev


def _default_questions(book_dir: Path) -> Path | None:
    """The bundled set for the bundled book; None for any other book (a synthetic set is written from it)."""
    return BUNDLED_QUESTIONS if Path(book_dir).resolve() == BUNDLED_BOOK.resolve() else None


def _print_selection(manifest: dict) -> None:
    """A row per candidate (dev figures, simplest first), what was kept and why, and the refusal gate."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from programs.compile.compiler import verdict
    from programs.evaluate.figures import CANDIDATE_COLUMNS

    selection = manifest["selection"]
    table = Table(title="Candidates on dev, simplest first (n: questions scored)",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)  # fits 80 columns
    table.add_column("candidate", no_wrap=True)
    for figure in CANDIDATE_COLUMNS:  # the figures the choice is read on (the manifest holds every score)
        table.add_column(figure.column, justify="right")
    table.add_column("", no_wrap=True)
    for candidate in selection["candidates"]:
        table.add_row(candidate["name"], *(_figure(candidate[f.name]) for f in CANDIDATE_COLUMNS),
                      candidate["status"])
    Console().print(table)
    print(verdict(selection))
    print(f"Why: {selection['reason']}")
    gate = manifest["refusal_gate"]
    print(f"Refusal gate: {gate['chosen']} (threshold {gate['threshold']:.3f}); dev candidates: "
          + ", ".join(f"{n} {c['balanced']:.3f}" for n, c in gate["candidates"].items()))


def _figure(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def command() -> None:
    """`bookrag-optimize` (installed) and `python optimize.py`: main() under the CLI's one error handler."""
    run(main)
