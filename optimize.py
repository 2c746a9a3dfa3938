"""Compile the BookRAG program against a labeled question set and write it to `artifacts/<name>/`.

    python optimize.py [--optimizer labeled|bootstrap|random-search|mipro|gepa] [--book DIR] [--questions FILE]
                       [--lm MODEL] [--teacher-lm MODEL] [--answer-mode generated|extractive]
                       [--out DIR] [--max-demos N] [--threads N] [--seed N] [--json] [--verbose]

Calibrates the refusal gate and compiles candidate programs on the train split, scores them on dev, keeps the
zero-shot program unless a compiled one beats it outside noise, and writes `program.json` + `manifest.json`
atomically: a killed run leaves the previous artifact intact.
A book other than the bundled one with no `--questions` gets a synthetic set written from the book, saved beside
the artifact as `<artifact>-questions.csv` (programs/compile/synthetic_questions.py).
--out must be new, empty or an artifact of ours (checked before any work): nothing else is ever replaced.
Exit codes: 0 written, 2 configuration error, 3 store/embedding/LM error, 4 bad arguments, question file or an --out
it may not write.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bookrag.cli import ArgumentParser, load_settings, run, setup_logging
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS, PROJECT_ROOT, book_name
from bookrag.errors import DatasetError


def main(argv: list[str] | None = None) -> int:
    from bookrag.output_folder import OutputFolder
    from programs.compile.artifact import ARTIFACT_OUTPUT, MAX_DEMOS, write_artifact
    from programs.compile.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS

    parser = ArgumentParser(description="Compile the bookrag program against labeled questions.")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default=DEFAULT_OPTIMIZER,
                        help=f"DSPy teleprompter for the predictors (default {DEFAULT_OPTIMIZER}; see README)")
    parser.add_argument("--questions", type=Path,
                        help="labeled CSV/JSONL question set (default: the bundled set for the bundled book; for "
                             "another book, a synthetic set written from the book beside the artifact)")
    parser.add_argument("--teacher-lm", help="LM that bootstraps demos / proposes instructions (default: --lm)")
    parser.add_argument("--out", type=Path, help="artifact folder (default: artifacts/<book name>/)")
    parser.add_argument("--max-demos", type=int, default=4,
                        help=f"most demos per predictor (at most {MAX_DEMOS}); bootstrap and labeled also try half as many "
                             "(default 4)")
    parser.add_argument("--threads", type=int, default=1, help="parallel LM calls while compiling (default 1)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed for the optimizers, the dev subset and the selection's bootstrap (default 0)")
    parser.add_program_arguments(json_help="print the manifest as JSON on stdout, nothing else")
    args = parser.parse_args(argv)
    if not 0 <= args.max_demos <= MAX_DEMOS or args.threads < 1:
        parser.error(f"--max-demos must be from 0 to {MAX_DEMOS} and --threads >= 1")
    setup_logging(args.verbose)
    settings = load_settings(book_dir=args.book, lm=args.lm, answer_mode=args.answer_mode)
    out = args.out or settings.artifacts_dir / book_name(settings.book_dir)
    OutputFolder(out, ARTIFACT_OUTPUT).claim(settings)  # a folder we may not replace fails now, not after the run
    questions_path = args.questions or _default_questions(settings.book_dir)
    say = (lambda *_: None) if args.json else print
    progress = False if args.json else None

    from bookrag.questions import load_questions
    from programs.compile.candidates import candidates
    from programs.compile.compiler import compile_program
    from programs.compile.optimizers import OptimizerSettings
    from programs.compile.synthetic_questions import synthetic_question_file, synthetic_questions_path
    from programs.lm.language_model import lm_mode, make_lm
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    lm = make_lm(settings)
    synthetic = questions_path is None
    if synthetic:  # a book nobody labeled: questions written from the book itself, kept beside the artifact
        with BookIndex(settings) as index:
            index.ingest(progress=progress)
            questions_path = synthetic_question_file(index, lm, synthetic_questions_path(out), progress, say)
    questions = load_questions(questions_path)
    train = [q for q in questions if q.split == "train"]
    dev = [q for q in questions if q.split == "dev"]
    if not train or not dev:
        raise DatasetError(f"{questions_path} needs questions in both the train and dev splits")
    if len({q.answerable for q in train}) < 2:  # the refusal gate is fitted on both kinds
        raise DatasetError(f"{questions_path} needs answerable and must-refuse (answerable=false) questions in "
                           "its train split to calibrate the refusal gate")
    random.seed(args.seed)
    optimizer = OptimizerSettings(args.optimizer, args.max_demos, args.threads, args.seed, args.teacher_lm)
    started = time.time()
    with BookIndex(settings) as index:
        report = index.ingest(progress=progress)  # incremental: a no-op when the book is unchanged
        say(f"Index {index.collection}: {report.summary()}")
        program = BookRAG.from_settings(settings, index, lm=lm)
        teacher = make_lm(settings.replace(lm=args.teacher_lm)) if args.teacher_lm else None
        say(f"Compiling with {args.optimizer} on {len(train)} train questions "
            f"({'generated' if program.generates else 'extractive'} answers, LM {settings.lm}); dev: {len(dev)}; "
            f"candidates: {', '.join(c.name for c in candidates(optimizer))}")
        result = compile_program(program, train, dev, optimizer, teacher_lm=teacher, progress=progress, say=say)
        manifest = {
            "bookrag_version": _version("bookrag"),
            "dspy_version": _version("dspy"),
            "lm": settings.lm,
            "teacher_lm": args.teacher_lm,
            "local_model": lm.model.removeprefix("local/") if lm_mode(lm) == "local" else None,
            "answer_mode": settings.answer_mode,
            "embedder": index.embedder.name,
            "embedder_model": index.embedder.model_id,
            "collection": index.collection,
            "book": _relative(index.book_dir),
            "index_fingerprint": index.fingerprint(),
            "search_mode": program.search_mode,
            "expand": program.expand,
            "top_k": program.k,
            "refusal_gate": {k: v for k, v in result.gate.items() if k != "state"},
            "dataset": {"path": _relative(questions_path), "sha256": _sha256(questions_path),
                        "train": len(train), "dev": len(dev), "labels": "synthetic" if synthetic else "hand-labeled"},
            "optimizer": optimizer.as_dict(),
            "scores": result.scores,
            "selection": result.selection,
            "duration_s": round(time.time() - started, 1),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_artifact(result.program, out, manifest)
    if args.json:
        print(json.dumps(manifest))
    else:
        _print_selection(manifest)
        print(f"Wrote {out}/ (program.json, manifest.json) in {manifest['duration_s']} s")
    return 0


def _default_questions(book_dir: Path) -> Path | None:
    """The bundled set for the bundled book; None for any other book (a synthetic set is written from it)."""
    return BUNDLED_QUESTIONS if Path(book_dir).resolve() == BUNDLED_BOOK.resolve() else None


def _relative(path: Path) -> str:
    """A path inside the project is stored relative to it, so the artifact survives a moved checkout."""
    path = Path(path).resolve()
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


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


if __name__ == "__main__":
    run(main)
