"""Train the shipped reader: a LoRA adapter for the packaged model, trained on the train splits of the books the team
labeled, written to `adapters/reader/` (adapter.gguf and its manifest).

    python train_reader.py [--epochs N] [--examples N|all] [--minutes M] [--[no-]frozen-int8] [--top-layers N]
                           [--rank N] [--[no-]bootstrap] [--replies-only] [--out DIR] [--seed N] [--json] [--verbose]

Its questions: each training book's labeled set, train split only, and its reader-training set
(`datasets/reader-training/`, every row train). Never book B, never a dev or test split. The base reader's replies to
the training prompts are kept in `datasets/reader-training/replies.jsonl`: a training asks only for those missing,
and `--replies-only` writes them and stops (a killed run goes on where it stopped). A book's own compile trains on
top of this adapter (`python optimize.py --optimizer finetune`).
Exit codes: 0 written, 2 configuration error, 3 store/embedding/LM error, 4 bad arguments or question file.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from bookrag.cli import ArgumentParser, load_settings, notice, run, setup_logging, user_path
from bookrag.config import BUNDLED_BOOK, PROJECT_ROOT, SHIPPED_ADAPTER
from bookrag.errors import BadArgumentError, DatasetError, ExitCode
from bookrag.output_folder import OutputFolder, OutputKind

SHARED_CORPORA = PROJECT_ROOT.parent / "shared" / "corpora"
DATASETS = PROJECT_ROOT / "datasets"
REPLIES = DATASETS / "reader-training" / "replies.jsonl"  # the base reader's replies to the training prompts
# (book folder, labeled set: its train split is used, reader-training set: every row is train)
TRAINING_BOOKS = (
    (BUNDLED_BOOK, DATASETS / "humanoid-primer.csv", DATASETS / "reader-training" / "humanoid-primer.csv"),
    (SHARED_CORPORA / "physical-ai-book-a", DATASETS / "physical-ai-book-a.csv",
     DATASETS / "reader-training" / "physical-ai-book-a.csv"),
    (SHARED_CORPORA / "fastapi-tutorial", DATASETS / "fastapi-tutorial.csv",
     DATASETS / "reader-training" / "fastapi-tutorial.csv"),
)


READER_OUTPUT = OutputKind("trained reader", "manifest.json", ("adapter", "sha256", "training"),
                           ("adapter.gguf", "manifest.json"))


def main(argv: list[str] | None = None) -> int:
    from programs.compile.finetune import check_can_train

    parser = build_parser()
    args = parser.parse_args(argv)
    if min(args.epochs, args.top_layers, args.rank) < 1:
        parser.error("--epochs, --top-layers and --rank must be at least 1")
    setup_logging(args.verbose)
    settings = dataclasses.replace(load_settings(lm="local"), local_adapter=None)  # from the model as it is
    check_can_train(settings)
    say = (lambda *_: None) if args.json else notice
    if args.replies_only:
        summary = write_replies(settings, reader_settings(args), say)
        print(json.dumps(summary) if args.json else f"{summary['replies']}: targets {summary['sources']}; the first key "
              f"fact's passage best-first {summary['fact_passage']['best_first']} -> shown "
              f"{summary['fact_passage']['shown']}")
        return ExitCode.OK
    books = [book for book, _, _ in TRAINING_BOOKS]
    out = OutputFolder(args.out, READER_OUTPUT).claim(settings, books)  # now, not after hours of training
    command = shlex.join(["python", "train_reader.py", *(sys.argv[1:] if argv is None else argv)])
    manifest = train(settings, reader_settings(args), out, command, say=say)
    print(json.dumps(manifest) if args.json else f"Wrote {args.out}/ (adapter.gguf, manifest.json) in "
                                                 f"{manifest['training']['minutes']} min")
    return ExitCode.OK


def build_parser() -> ArgumentParser:
    from programs.cli.training_flags import add_training_arguments
    from programs.compile.finetune_settings import FinetuneSettings

    defaults = FinetuneSettings()
    parser = ArgumentParser(description="Train the shipped reader (a LoRA adapter) on the labeled books' train splits.")
    add_training_arguments(parser)
    parser.add_argument("--top-layers", type=int, default=defaults.lora.top_layers,
                        help=f"adapt the model's last N layers (default {defaults.lora.top_layers})")
    parser.add_argument("--rank", type=int, default=defaults.lora.rank, help=f"LoRA rank (default {defaults.lora.rank})")
    parser.add_argument("--out", type=user_path, default=SHIPPED_ADAPTER.parent,
                        help="folder for adapter.gguf and manifest.json (default: adapters/reader/)")
    parser.add_argument("--seed", type=int, default=defaults.plan.seed,
                        help=f"seed of the order and initial weights (default {defaults.plan.seed})")
    parser.add_argument("--replies-only", action="store_true",
                        help=f"write the base reader's replies to the chosen training prompts into "
                             f"{REPLIES.relative_to(PROJECT_ROOT)} (those it lacks) and stop, without training")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON on stdout, nothing else")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging on stderr")
    return parser


def reader_settings(args):
    """The FinetuneSettings the flags ask for: the LoRA's rank (LoraConfig's alpha follows it) and top layers."""
    from programs.cli.training_flags import finetune_settings
    from programs.train.lora_config import LoraConfig

    return finetune_settings(args, LoraConfig(rank=args.rank, top_layers=args.top_layers))


def train(settings, training, out: Path, command: str, say=notice) -> dict:
    """Train on every training book as `training` (FinetuneSettings) says and write the adapter and its manifest to
    `out`; return the manifest."""
    from programs.compile.artifact import ADAPTER_FILE, file_sha256, project_relative

    with training_books(settings, say) as (lm, books):
        reader = reader_finetune(settings, training, say).fit(books)
        records = [{"book": project_relative(book), "questions": len(questions),
                    "files": {project_relative(p): file_sha256(p) for p in (labeled, extra)}}
                   for (book, labeled, extra), (_, _, questions) in zip(TRAINING_BOOKS, books, strict=True)]
    manifest = {"adapter": ADAPTER_FILE, "sha256": file_sha256(reader.path), "base_model": lm.model,
                "base_model_identity": lm.engine.identity, "books": records, "training": reader.training,
                "command": command,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_reader(reader.path, manifest, out, settings.data_dir)
    return manifest


def write_replies(settings, training, say=notice) -> dict:
    """The base reader's replies to the chosen training prompts written into REPLIES (only those it lacks); what the
    targets would be made of."""
    from collections import Counter

    from programs.compile.finetune import fact_places

    with training_books(settings, say) as (_, books):
        finetune = reader_finetune(settings, training, say)
        targets, planned = finetune.targets(books)
    return {"replies": str(REPLIES.relative_to(PROJECT_ROOT)), "targets": len(targets), "planned": planned,
            "sources": dict(sorted(Counter(t.source for _, _, t in targets).items())),
            "fact_passage": fact_places([t for _, _, t in targets])}


def reader_finetune(settings, training, say):
    from programs.compile.finetune import ReaderFinetune
    from programs.compile.finetune_settings import training_folder

    return ReaderFinetune(training, training_folder(settings, "reader"), say=say, replies_file=REPLIES)


@contextmanager
def training_books(settings, say):
    """(the local LM, [(book name, its program, its training questions)]) for every training book, indexed."""
    from programs.lm.language_model import make_lm
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    lm = make_lm(settings)
    indexes = [BookIndex(settings, book) for book, _, _ in TRAINING_BOOKS]
    try:
        books = []
        for index, (book, labeled, extra) in zip(indexes, TRAINING_BOOKS, strict=True):
            index.update(say, None)
            books.append((book.name, BookRAG.from_settings(settings, index, lm=lm), training_questions(labeled, extra)))
        yield lm, books
    finally:
        for index in indexes:
            index.close()


def training_questions(labeled: Path, extra: Path) -> list:
    """The labeled set's train split and every row of the reader-training set (which must all be train)."""
    from bookrag.questions import load_questions

    questions = [q for q in load_questions(labeled) if q.split == "train"]
    more = load_questions(extra)
    if stray := [q.id for q in more if q.split != "train"]:
        raise DatasetError(f"{extra} holds rows outside the train split ({', '.join(stray[:3])}): training never "
                           "reads dev or test questions")
    return questions + more


def write_reader(adapter: Path, manifest: dict, out: Path, data_dir: Path | None = None) -> None:
    """adapter.gguf and its manifest swapped in together (the swap recorded in `data_dir`): a killed run leaves the
    previous pair, whose manifest names its adapter by checksum. `out` is checked again first: files put there
    during the training are refused, not deleted, and the trained adapter is not lost."""
    from programs.compile.artifact import ADAPTER_FILE

    def fill(staging: Path) -> None:
        shutil.copyfile(adapter, staging / ADAPTER_FILE)
        (staging / READER_OUTPUT.marker).write_text(json.dumps(manifest, indent=1) + "\n")

    try:
        OutputFolder(out, READER_OUTPUT).replace_whole(fill, data_dir)
    except BadArgumentError as exc:
        raise BadArgumentError(f"{exc}; the trained adapter is kept at {adapter}") from None


def command() -> None:
    """`bookrag-train-reader` (installed) and `python train_reader.py`: main() under the CLI's one error handler."""
    run(main)
