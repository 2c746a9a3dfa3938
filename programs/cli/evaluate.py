"""Accuracy reports for bookrag: a program (compiled, zero-shot or the seed-style baseline) over labeled questions.

    python evaluate.py [--program artifacts/<name> | --zero-shot | --baseline | --compare A B]
                       [--questions FILE] [--book DIR] [--split test] [--style NAME[,NAME]] [--min-combined 0.8]
                       [--json] [--out DIR] [--lm MODEL] [--threads N] [--semantic-f1]
    python evaluate.py --retrieval-only [--book DIR] [--questions FILE] [--top-k 5] [--mode hybrid] [--mmr] [--json]

Writes report.json, predictions.csv and PNG plots to --out (default reports/<book>-<split>/). The report has figures
per category and, for a question file with a style column, per style (must-refuse rows, which have no style, as the
style `must-refuse`; answerable rows without one in none); --style evaluates only the questions of those styles.
--out must be new, empty or a report folder of ours, outside the book (checked before any work); the other files in
it are kept. A program that fails after another finished, or SIGINT/SIGTERM, still writes what finished
(report.json: "partial" says why and how much).
Exit codes: 0 ok, 2 configuration or artifact error, 3 store/embedding/LM error, 4 bad arguments, question file or
an --out it may not write, 5 combined score below --min-combined, 130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentTypeError
from datetime import UTC, datetime
from pathlib import Path

from bookrag.cli import ArgumentParser, load_settings, notice, run, setting_type, setup_logging, user_path
from bookrag.config import (
    BUNDLED_QUESTIONS,
    DEFAULT_SEARCH_MODE,
    DEFAULT_TOP_K,
    MAX_TOP_K,
    PROJECT_ROOT,
    SEARCH_MODES,
    book_name,
)
from bookrag.errors import ExitCode
from bookrag.terminal_text import printable
from programs.evaluate.styles import STYLE_CHOICES

ZERO_SHOT, BASELINE = "zero-shot", "baseline"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    setup_logging(args.verbose)
    settings = load_settings(book_dir=args.book, lm=args.lm, answer_mode=args.answer_mode, top_k=args.top_k)
    specs = [] if args.retrieval_only else programs_to_read(parser, args, settings)
    if args.semantic_f1 and settings.lm == "local":
        parser.error("--semantic-f1 needs a hosted LM judge (--lm openai/gpt-4o-mini or BOOKRAG_LM); "
                     "a small local model is not a trustworthy judge")
    if args.retrieval_only:
        return evaluate_retrieval(args, settings)
    return evaluate_programs(args, settings, specs)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        description="Evaluate bookrag on a labeled question set.",
        epilog="Programs: an artifact folder, `zero-shot` (uncompiled) or `baseline` (dense-only top-5, fixed 0.70 "
               "cosine cut, uncompiled prompt). Without a program flag: artifacts/<book>/ if compiled, else zero-shot.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--program", type=user_path, metavar="ARTIFACT", help="a compiled program folder")
    which.add_argument("--zero-shot", action="store_true", help="the uncompiled program")
    which.add_argument("--baseline", action="store_true", help="the seed-style baseline")
    which.add_argument("--compare", nargs=2, type=program_spec, metavar=("A", "B"),
                       help="two programs (artifact folder, zero-shot or baseline) on the same questions; B is the "
                            "candidate that --min-combined gates")
    which.add_argument("--retrieval-only", action="store_true", help="evaluate the retriever alone")
    parser.add_argument("--questions", type=user_path, default=BUNDLED_QUESTIONS, help="CSV or JSONL question file")
    parser.add_argument("--split", choices=("train", "dev", "test", "all"),
                        help="questions to use (default: test; all with --retrieval-only)")
    parser.add_argument("--style", type=style_names, metavar="NAME[,NAME]",
                        help="only questions of these styles (the question file's style column): "
                             f"{', '.join(STYLE_CHOICES)}; must-refuse: the questions to refuse, which have no style")
    parser.add_argument("--min-combined", type=float, metavar="X",
                        help="exit 5 when the combined score (0..1) of the evaluated program, with --compare of B, "
                             "is below X")
    parser.add_argument("--out", type=user_path, help="report folder (default: reports/<book>-<split>/)")
    parser.add_argument("--threads", type=int, default=1,
                        help="questions answered at once, for a hosted LM (default 1; the local model already uses "
                             "every core, so it runs one at a time)")
    parser.add_argument("--semantic-f1", action="store_true",
                        help="also score answers with LM-judged semantic F1 (needs a hosted --lm)")
    parser.add_argument("--top-k", type=setting_type("top_k"),
                        help=f"--retrieval-only: passages retrieved per question, 1 to {MAX_TOP_K} (default: "
                             f"BOOKRAG_TOP_K or {DEFAULT_TOP_K})")
    parser.add_argument("--mode", choices=SEARCH_MODES,
                        help=f"--retrieval-only: search mode (default {DEFAULT_SEARCH_MODE})")
    parser.add_argument("--mmr", action="store_true", help="--retrieval-only: diversify passages with MMR")
    parser.add_program_arguments(json_help="print one JSON object on stdout and nothing else")
    return parser


def program_spec(text: str) -> str:
    """--compare's program: `zero-shot`, `baseline`, or an artifact folder (`~` is the user's home)."""
    return text if text in (ZERO_SHOT, BASELINE) else str(user_path(text))


def style_names(text: str) -> tuple[str, ...]:
    """--style's value: the style names it lists, each a known one."""
    from programs.evaluate.styles import parse_styles

    try:
        return parse_styles(text)
    except ValueError as exc:
        raise ArgumentTypeError(str(exc)) from None


def check_arguments(parser: ArgumentParser, args) -> None:
    """Bounds and combinations of the flags: a bad one exits 4 before any work."""
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if not args.retrieval_only and (args.top_k is not None or args.mode or args.mmr):
        parser.error("--top-k, --mode and --mmr apply to --retrieval-only; a program uses its own retrieval settings")
    if args.min_combined is not None and not 0.0 <= args.min_combined <= 1.0:
        parser.error(f"--min-combined is a combined score from 0 to 1, got {args.min_combined}")


def programs_to_read(parser: ArgumentParser, args, settings) -> list[str]:
    """The programs the flags name, each artifact folder as it is read: one an optimize killed between its two
    renames left aside is read there (never moved by a reader). Each must exist; --compare's two differ."""
    from bookrag.atomic_file import folder_to_read

    specs = [spec if spec in (ZERO_SHOT, BASELINE) else str(folder_to_read(Path(spec), settings.data_dir))
             for spec in program_specs(args)]
    for spec in specs:
        if spec not in (ZERO_SHOT, BASELINE) and not Path(spec).is_dir():
            parser.error(f"program {spec} is not an artifact folder (nor zero-shot or baseline)")
    if args.compare and args.compare[0] == args.compare[1]:
        parser.error("--compare needs two different programs")
    return specs


def program_specs(args) -> list[str]:
    if args.compare:
        return list(args.compare)
    if args.zero_shot:
        return [ZERO_SHOT]
    if args.baseline:
        return [BASELINE]
    if args.program:
        return [str(args.program)]
    return []  # the default, resolved once the settings are known


def evaluate_programs(args, settings, specs: list[str]) -> int:
    """Each program over the split's questions; the report files, the figures shown, and the --min-combined gate."""
    from bookrag.output_folder import OutputFolder
    from programs.compile.artifact import default_artifact
    from programs.evaluate.report_files import REPORT_OUTPUT

    split = args.split or "test"
    out_dir = args.out or PROJECT_ROOT / "reports" / f"{book_name(settings.book_dir)}-{split}"
    named = "--out" if args.out else "the default report folder"
    OutputFolder(out_dir, REPORT_OUTPUT, named).claim(settings)  # a folder we may not write fails now, not after the run
    questions = chosen_questions(args, split)  # a bad file fails before the index is touched
    specs = specs or [str(default_artifact(settings, settings.book_dir) or ZERO_SHOT)]
    run, stopped = answer_questions(args, settings, specs, questions, out_dir)
    if stopped:
        return stopped
    files = run.write()
    if args.json:
        summaries = {name: summary(name, report) for name, report in run.reports.items()}
        document = summaries[specs[0]] if len(specs) == 1 else {"programs": summaries}
        print(json.dumps({**document, "report_dir": str(out_dir)}))
    else:
        print_programs(run.reports, run.run_settings)
        print(f"Wrote {', '.join(f.name for f in files)} to {out_dir}")
    return below_gate(args.min_combined, specs[-1], run.reports[specs[-1]])  # with --compare, B (the candidate)


def chosen_questions(args, split: str) -> list:
    """The split's questions of the question file, of the --style styles if given; none is a question file
    error."""
    from bookrag.errors import DatasetError
    from bookrag.questions import load_questions
    from programs.evaluate.styles import of_styles

    questions = load_questions(args.questions, split=split)
    if not questions:
        raise DatasetError(f"{args.questions} has no {split} questions")
    if args.style and not (questions := of_styles(questions, args.style)):
        raise DatasetError(f"{args.questions} has no {split} questions of style {', '.join(args.style)} (its "
                           "style column names each question's style; must-refuse: the rows to refuse)")
    return questions


def answer_questions(args, settings, specs: list[str], questions: list, out_dir: Path):
    """The ProgramRuns of every program over the questions on one BookIndex (one embedding model and one store for
    all of them), and the exit code of a stop signal (None when every program finished)."""
    from programs.compile.artifact import check_artifact, read_manifest
    from programs.evaluate.program_runs import ProgramRuns, signals_stop_the_run
    from programs.rag.bounded_question import MAX_QUERY_CHARS
    from retrievers import BookIndex

    progress = False if args.json else None
    with BookIndex(settings) as index:
        for spec in specs:  # a mismatched artifact is refused before the ingest can embed anything
            if spec not in (ZERO_SHOT, BASELINE):
                check_artifact(read_manifest(Path(spec)), Path(spec), settings, index)
        index.update(notice, progress, reread=True)  # incremental: a no-op when the book is unchanged
        programs = {spec: build_program(spec, index, settings) for spec in specs}
        # Load the embedding model before anything is timed (with no more of the question than the program reads).
        index.retriever.search(questions[0].question[:MAX_QUERY_CHARS], k=1)
        judge = next(iter(programs.values())).lm if args.semantic_f1 else None
        threads = answer_threads(args.threads, settings)
        run = ProgramRuns(programs, questions, out_dir, run_settings(args, settings, index, programs, threads),
                          say=notice)
        with signals_stop_the_run():
            return run, run.answer(progress=progress, judge=judge, threads=threads)


def run_settings(args, settings, index, programs: dict, threads: int) -> dict:
    """What the run was: report.json's `settings`."""
    return {
        "book": str(settings.book_dir), "collection": index.collection, "embedder": index.embedder.model_id,
        "questions": str(args.questions), "split": args.split or "test", "styles": args.style and list(args.style),
        "programs": list(programs),
        "lm": settings.lm, "readers": {name: _reader(p) for name, p in programs.items()},
        "expand": query_expansion(programs), "threads": threads,
        "manifests": {name: getattr(p, "manifest", None) for name, p in programs.items()},
        "min_combined": args.min_combined, "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _reader(program) -> str | None:
    """Which weights answered: a local model's identity (its GGUF and adapter checksums), or the hosted model."""
    lm = getattr(program, "lm", None)
    return getattr(lm.engine, "identity", lm.model) if lm is not None else None


def below_gate(min_combined: float | None, name: str, report: dict) -> int:
    """BELOW_GATE, said on stderr, when the program's combined score is below --min-combined; else OK."""
    if min_combined is not None and report["combined"] < min_combined:
        notice(f"{name}: combined {report['combined']:.3f} is below --min-combined {min_combined}")
        return ExitCode.BELOW_GATE
    return ExitCode.OK


def build_program(spec: str, index, settings):
    """A BookRAG on `index`'s retriever: `zero-shot`, `baseline`, or a compiled artifact folder."""
    from programs.compile.artifact import load_program
    from programs.rag.baseline import baseline_program
    from programs.rag.book_rag import BookRAG

    if spec == BASELINE:
        return baseline_program(settings, index)
    if spec == ZERO_SHOT:
        return BookRAG.from_settings(settings, index)
    return load_program(Path(spec), settings, index=index)


def answer_threads(requested: int, settings) -> int:
    """Questions answered at once: as requested for a hosted LM; one for the local model, whose llama.cpp context
    answers one call at a time on every core (more threads would only queue behind its lock)."""
    if requested > 1 and settings.lm == "local":
        print(f"--threads {requested}: the local model answers one question at a time; running with 1",
              file=sys.stderr)
        return 1
    return requested


def query_expansion(programs: dict) -> str | dict[str, str]:
    """The query expansion the programs ran with: one mode, or each program's when they differ."""
    modes = {name: str(program.expand) for name, program in programs.items()}
    return next(iter(modes.values())) if len(set(modes.values())) == 1 else modes


def summary(name: str, report: dict) -> dict:
    """The --json figures of one program (no per-question rows)."""
    from programs.evaluate.figures import SUMMARY

    return {"program": name, **{key: report[key] for key in SUMMARY if key in report}}


def evaluate_retrieval(args, settings) -> int:
    from bookrag.questions import load_questions
    from programs.evaluate.reports import retrieval_report
    from programs.evaluate.styles import of_styles
    from retrievers import BookIndex

    k, mode = settings.top_k, args.mode or DEFAULT_SEARCH_MODE
    questions = load_questions(args.questions, split=args.split or "all")
    questions = of_styles(questions, args.style) if args.style else questions
    with BookIndex(settings) as index:
        index.ingest(progress=not args.json and None)  # incremental: a no-op when the book is unchanged
        report = retrieval_report(index.retriever, questions, k=k, mode=mode, mmr=args.mmr,
                                  progress=not args.json and None)
    report["collection"] = index.collection
    if args.json:
        print(json.dumps(report))
    else:
        print_retrieval(report)
    return ExitCode.OK


def print_programs(reports: dict[str, dict], run_settings: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from programs.evaluate.figures import TERMINAL

    first = next(iter(reports.values()))
    overall = Table(title=f"{run_settings['collection']} — {run_settings['split']} split, n={first['n']} "
                          f"({first['n_answerable']} answerable, {first['n_must_refuse']} must refuse)")
    overall.add_column("metric")
    for name in reports:
        overall.add_column(Text(printable(name)), justify="right")
    for figure in TERMINAL:
        if figure.name in first:
            overall.add_row(figure.label, *(figure_cell(figure, report) for report in reports.values()))
    per_category = Table(title="Per category: share passed (answered with every key fact, or refused) · token F1 "
                               "· median words")
    per_category.add_column("category")
    per_category.add_column("n", justify="right")
    for name in reports:
        per_category.add_column(Text(printable(name)), justify="right")
    for category, row in first["per_category"].items():  # the question file's words: no rich markup, no escapes
        per_category.add_row(Text(printable(category)), str(row["n"]),
                             *(category_cell(r["per_category"][category]) for r in reports.values()))
    console = Console()
    console.print(overall)
    console.print(per_category)
    if first["per_style"]:  # a question file with a style column
        console.print(per_style_table(reports))


def per_style_table(reports: dict[str, dict]):
    """n, and per program the pass rate, false refusal rate and wrong or partial share, for each style."""
    from rich.table import Table
    from rich.text import Text

    first = next(iter(reports.values()))
    table = Table(title="Per style: share passed · answerable falsely refused · answerable wrong or partial")
    table.add_column("style")
    table.add_column("n", justify="right")
    for name in reports:
        table.add_column(Text(printable(name)), justify="right")
    for style, row in first["per_style"].items():
        table.add_row(style, str(row["n"]), *(style_cell(r["per_style"][style]) for r in reports.values()))
    return table


def style_cell(row: dict) -> str:
    """`passed · falsely refused · wrong or partial` for a style with answerable questions, `passed` alone for
    must-refuse."""
    if not row["n_answerable"]:
        return f"{row['pass_rate']:.2f}"
    return f"{row['pass_rate']:.2f} · {row['false_refusal_rate']:.2f} · {row['wrong_or_partial']:.2f}"


def figure_cell(figure, report: dict) -> str:
    """The figure as the table writes it; "–" for a figure of the LM's answers when the program made no LM call
    (extractive), not a misleading 0."""
    return "–" if figure.lm_only and not report["lm_calls"] else figure.format.format(report[figure.name])


def category_cell(row: dict) -> str:
    """`passed · F1 · words` for a category with answerable questions, `passed` alone for must-refuse ones."""
    if not row["n_answerable"]:
        return f"{row['pass_rate']:.2f}"
    return f"{row['pass_rate']:.2f} · {row['token_f1']:.2f} · {row['answer_words_p50']:.0f}"


def print_retrieval(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"Retrieval on {report['collection']} — {report['mode']}, k={report['k']}, n={report['n']}")
    table.add_column("category")
    table.add_column("n", justify="right")
    table.add_column(f"recall@{report['k']}", justify="right")
    for category, row in report["per_category"].items():
        table.add_row(Text(printable(category)), str(row["n"]), f"{row['recall_at_k']:.2f}")
    table.add_row("all", str(report["n"]), f"{report['recall_at_k']:.2f}", style="bold")
    console = Console()
    console.print(table)
    console.print(f"MRR {report['mrr']:.3f}   query p50 {report['latency_p50_ms']:.1f} ms, "
                  f"p95 {report['latency_p95_ms']:.1f} ms")


def command() -> None:
    """`bookrag-evaluate` (installed) and `python evaluate.py`: main() under the CLI's one error handler."""
    run(main)
