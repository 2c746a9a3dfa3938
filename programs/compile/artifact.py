"""Compiled-program artifacts: `artifacts/<name>/program.json` (DSPy state, JSON, never pickle) and
`manifest.json` (what it was compiled against). Written atomically; checked against the index on load."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bookrag.atomic_file import folder_to_read
from bookrag.config import PROJECT_ROOT, Settings, book_name
from bookrag.errors import ArtifactError
from bookrag.file_checksum import file_sha256
from bookrag.json_document import UnreadableJSON, read_json_file
from bookrag.output_folder import OutputFolder, OutputKind

log = logging.getLogger(__name__)

PROGRAM_FILE, MANIFEST_FILE, ADAPTER_FILE = "program.json", "manifest.json", "adapter.gguf"
MANIFEST_KEYS = ("bookrag_version", "dspy_version", "lm", "embedder", "collection", "book", "index_fingerprint")
ARTIFACT_OUTPUT = OutputKind("compiled program", MANIFEST_FILE, MANIFEST_KEYS,
                             (PROGRAM_FILE, MANIFEST_FILE, ADAPTER_FILE))
# Demos per predictor, at most: every demo is sent with every question (a bootstrapped one carries its passages,
# ~1 KB). 32 is 8x optimize's default --max-demos and above what DSPy's few-shot optimizers keep by default
# (16 labeled + 4 bootstrapped); a program.json edited to hold 20,000 sent a 22.5 MB request to a hosted LM.
MAX_DEMOS = 32


def build_manifest(settings: Settings, index, result, optimizer, dataset: dict, started: float) -> dict:
    """What the program a compile kept (`result`: the compiler's CompileResult) was compiled against and how
    (`dataset`: `dataset_record`'s; `started`: the compile's `time.time()`): the MANIFEST_KEYS `read_manifest` and
    `check_artifact` read back, and the record of the compile."""
    from programs.lm.language_model import lm_mode
    from retrievers.reranker import reranker_record

    program = result.program  # the kept one: a trained reader answers only in the finetune candidate
    return {
        "bookrag_version": _version("bookrag"),
        "dspy_version": _version("dspy"),
        "lm": settings.lm,
        "teacher_lm": optimizer.teacher_lm,
        "local_model": program.lm.model.removeprefix("local/") if lm_mode(program.lm) == "local" else None,
        "reader": reader_record(program),
        "answer_mode": settings.answer_mode,
        "embedder": index.embedder.name,
        "embedder_model": index.embedder.model_id,
        "reranker": reranker_record(index.retriever.reranker),
        "collection": index.collection,
        "book": project_relative(index.book_dir),
        "index_fingerprint": index.fingerprint(),
        "search_mode": program.search_mode,
        "expand": program.expand,
        "top_k": program.top_k,
        "refusal_gate": {k: v for k, v in result.gate.items() if k != "state"},
        "dataset": dataset,
        "optimizer": optimizer.as_dict(),
        "scores": result.scores,
        "selection": result.selection,
        "duration_s": round(time.time() - started, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def reader_record(program) -> dict | None:
    """The local reader's LoRA adapter, None without one: the artifact's own (`adapter.gguf`, trained by this
    compile, with its training record) or the configured one (the shipped reader), each with its checksum."""
    from programs.lm.language_model import lm_adapter

    adapter = lm_adapter(program.lm)
    if adapter is None:
        return None
    trained = adapter.training is not None
    return {"adapter": ADAPTER_FILE if trained else project_relative(adapter.path),
            "sha256": file_sha256(adapter.path), "training": adapter.training}


def dataset_record(path: Path, train: int, dev: int, synthetic: bool) -> dict:
    """The manifest's `dataset`: the question file (and its hash), its train and dev sizes, who labeled it."""
    return {"path": project_relative(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "train": train, "dev": dev, "labels": "synthetic" if synthetic else "hand-labeled"}


def project_relative(path: Path) -> str:
    """A path inside the project is stored relative to it, so the artifact survives a moved checkout."""
    path = Path(path).resolve()
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def write_artifact(program, out_dir: Path, manifest: dict, data_dir: Path | None = None) -> Path:
    """Write into a fresh sibling folder, then swap it in (`OutputFolder.replace_whole`, recording the swap in
    `data_dir`): a killed run leaves the previous artifact intact, and what a killed swap recorded there left is
    repaired first; two runs writing the same artifact at once are not supported. Only a new or empty folder or a
    previous artifact and nothing else is replaced: a file, someone else's folder or files beside an artifact are
    refused (BadArgumentError). A symbolic link is written through: the folder it names is replaced, the link kept.
    """
    from programs.lm.language_model import lm_adapter

    def fill(staging: Path) -> None:
        program.save(str(staging / PROGRAM_FILE))
        if (manifest.get("reader") or {}).get("adapter") == ADAPTER_FILE:  # the trained reader travels with it
            shutil.copyfile(lm_adapter(program.lm).path, staging / ADAPTER_FILE)
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    OutputFolder(out_dir, ARTIFACT_OUTPUT).replace_whole(fill, data_dir)
    return Path(out_dir)


def read_manifest(artifact_dir: Path) -> dict:
    artifact_dir = Path(artifact_dir)
    path = artifact_dir / MANIFEST_FILE
    if not artifact_dir.is_dir():
        raise ArtifactError(f"no compiled program at {artifact_dir}: run `python optimize.py` or check --program")
    try:
        manifest = read_json_file(path)
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing: the artifact is incomplete; recompile with `python optimize.py`") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); recompile") from None
    except UnreadableJSON as exc:
        raise unreadable(path, exc) from None
    missing = [k for k in MANIFEST_KEYS if k not in manifest] if isinstance(manifest, dict) else list(MANIFEST_KEYS)
    if missing:
        raise ArtifactError(f"{path} lacks {', '.join(missing)}: it was edited or is from another tool; recompile")
    return manifest


def load_program(artifact_dir: str | Path, settings: Settings | None = None, *, book_dir: Path | None = None,
                 lm=None, index=None):
    """A compiled BookRAG, ready to `ask()`. Refuses an artifact that does not match the index or LM, and an index
    whose last ingest did not finish (it says how to complete it).

    `index`: an already open BookIndex to run on (shares its embedder and retriever; without it, one is opened,
    and programs loaded in one process share the embedded store);
    `lm`: a ready `dspy.LM` instead of the one `settings.lm` names (the LM check is then the caller's).
    """
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    artifact_dir = Path(artifact_dir)
    manifest = read_manifest(artifact_dir)
    settings = settings or Settings.from_env()
    index = index or BookIndex(settings, book_dir or PROJECT_ROOT / manifest["book"])
    check_artifact(manifest, artifact_dir, settings, index, lm=lm)
    state = index.ingest_state()
    if state == "missing":
        raise ArtifactError(
            f"collection {index.collection} is missing or empty: run `python ingest.py {index.book_dir}` "
            "(or recompile)"
        )
    if state == "incomplete":  # answers from half an ingest would be silently wrong
        raise ArtifactError(f"the last ingest into {index.collection} did not finish, so it holds only part of the "
                            f"book: run `python ingest.py {index.book_dir}` to complete it")
    if state == "changed":  # answering from the old text would be silently wrong; the ingest is incremental
        index.update(log.warning, progress=False, state=state)
    if manifest["index_fingerprint"] != index.fingerprint():
        log.warning("%s: the book changed since this program was compiled; recompile with `python optimize.py` "
                    "for a calibrated refusal gate", artifact_dir)
    program = BookRAG.from_settings(settings, index, lm=lm, expand=compiled_expansion(manifest))
    if manifest.get("local_model") and program.lm.model != f"local/{manifest['local_model']}":
        log.warning("%s was compiled with the local model %s, not %s: its demos may suit the new model less; "
                    "recompile with `python optimize.py`", artifact_dir, manifest["local_model"], program.lm.model)
    bind_reader(program, manifest.get("reader"), artifact_dir)
    warn_of_another_reranker(manifest, artifact_dir, index)
    check_demo_counts(artifact_dir / PROGRAM_FILE)
    try:
        program.load(str(artifact_dir / PROGRAM_FILE))  # JSON state; DSPy refuses pickles unless allowed
    except FileNotFoundError:
        raise ArtifactError(f"{artifact_dir / PROGRAM_FILE} is missing; recompile with `python optimize.py`") from None
    except Exception as exc:  # noqa: BLE001 - JSON errors, wrong keys, bad gate state: all mean "corrupt"
        raise ArtifactError(f"{artifact_dir / PROGRAM_FILE} is corrupt, hand-edited or from another bookrag "
                            f"version ({exc}); recompile with `python optimize.py`") from None
    program.manifest = manifest
    return program


def bind_reader(program, reader: dict | None, artifact_dir: Path) -> None:
    """Answer with the artifact's own trained reader when it has one (checked against its checksum), whatever
    BOOKRAG_LOCAL_ADAPTER says: the reader is part of the compiled program. Warn when a program without one was
    compiled with another adapter than the one configured (its candidates were chosen on that reader's answers)."""
    from programs.lm.language_model import lm_adapter, with_adapter
    from programs.lm.reader_adapter import ReaderAdapter

    reader = reader or {}
    adapter = lm_adapter(program.lm)
    configured = adapter.path if adapter else None
    if reader.get("adapter") == ADAPTER_FILE:
        path = artifact_dir / ADAPTER_FILE
        if not path.is_file() or file_sha256(path) != reader.get("sha256"):
            raise ArtifactError(f"{path} is missing or not the adapter this program was trained with (its sha256 "
                                "differs from the manifest's): recompile with `python optimize.py --optimizer finetune`")
        program.lm = with_adapter(program.lm, ReaderAdapter(path))
    elif reader.get("sha256") != (file_sha256(configured) if configured else None):
        log.warning("%s was compiled with the local reader adapter %s, but %s is configured (BOOKRAG_LOCAL_ADAPTER): "
                    "its program was chosen on the other reader's answers; recompile with `python optimize.py`",
                    artifact_dir, reader.get("adapter") or "none", configured or "none")


def warn_of_another_reranker(manifest: dict, artifact_dir: Path, index) -> None:
    """A program compiled with another reranker, or with none, whose gate ignores rerank scores (`check_reranker`
    refuses the others) runs, but its demos and gate were chosen on the passages that reranker ranked."""
    from retrievers.reranker import reranker_record

    configured = reranker_record(index.retriever.reranker)
    if "reranker" in manifest and manifest["reranker"] != configured:
        log.warning("%s was compiled with %s, but %s is configured: it runs, as its refusal gate ignores rerank "
                    "scores, but its gate and demos were chosen on passages ranked as compiled; recompile with "
                    "`python optimize.py` for this configuration",
                    artifact_dir, reranker_name(manifest["reranker"]), reranker_name(configured))


def program_state(path: Path) -> dict:
    """program.json's state; {} for a missing file or one that is not a JSON object (`program.load` says so)."""
    try:
        state = read_json_file(path)
    except UnreadableJSON as exc:  # before `program.load` reads it: a FIFO would block it, /dev/zero fill memory
        raise unreadable(path, exc) from None
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def check_demo_counts(path: Path) -> None:
    """Refuse a program whose predictors hold more than MAX_DEMOS demos (a hand-edited or foreign program.json)."""
    for predictor, predictor_state in program_state(path).items():
        demos = predictor_state.get("demos") if isinstance(predictor_state, dict) else None
        if isinstance(demos, list) and len(demos) > MAX_DEMOS:
            raise ArtifactError(f"{path}: {predictor}.demos holds {len(demos)} demos; at most {MAX_DEMOS} are "
                                "sent with each question: recompile with `python optimize.py`")


def unreadable(path: Path, problem: UnreadableJSON) -> ArtifactError:
    """The error for an artifact's JSON file that `read_json_file` refuses (not a regular file, too large, not
    UTF-8, nested too deeply)."""
    return ArtifactError(f"{path} {problem}: it was hand-edited or is not from bookrag; recompile with "
                         "`python optimize.py`")


def check_artifact(manifest: dict, artifact_dir: Path, settings: Settings, index, lm=None) -> None:
    """Refuse an artifact that does not fit the configured LM (unless `lm` is given: the caller's to check), the
    index's embedder or its collection. Needs no indexed point and no embedding: callers that are about to ingest
    run it first, so a mismatch never costs a whole book of (paid) embeddings."""
    if lm is None and manifest["lm"] != settings.lm:
        raise ArtifactError(
            f"{artifact_dir} was compiled for the LM {manifest['lm']!r} but {settings.lm!r} is configured: "
            f"set BOOKRAG_LM={manifest['lm']} (or --lm), or recompile with `python optimize.py --lm {settings.lm}`"
        )
    if index.embedder.name != manifest["embedder"]:
        raise ArtifactError(
            f"{artifact_dir} was compiled with the {manifest['embedder']} embedder but {index.embedder.name} is "
            "configured: set BOOKRAG_EMBEDDER to match, or recompile with `python optimize.py`"
        )
    if settings.expand and settings.expand != compiled_expansion(manifest):
        raise ArtifactError(
            f"{artifact_dir} was compiled with query expansion {compiled_expansion(manifest)!r} but BOOKRAG_EXPAND="
            f"{settings.expand} is configured: unset BOOKRAG_EXPAND (or --expand) to use the compiled one, or "
            f"recompile with `BOOKRAG_EXPAND={settings.expand} python optimize.py`"
        )
    if (compiled_for := compiled_book(manifest)) != index.book_dir.resolve():
        raise ArtifactError(
            f"{artifact_dir} was compiled for the book at {compiled_for}, not {index.book_dir.resolve()}: pass "
            f"--book {compiled_for} to ask that book, or compile one for this book with `python optimize.py --book "
            f"{index.book_dir} --out DIR` and pass --program DIR"
        )
    if not is_collection_of(manifest["collection"], index):
        raise ArtifactError(f"{artifact_dir} was compiled for collection {manifest['collection']}, not "
                            f"{index.collection}: recompile with `python optimize.py --book {index.book_dir}`")
    check_reranker(manifest, artifact_dir, index)


def check_reranker(manifest: dict, artifact_dir: Path, index) -> None:
    """Refuse a program whose refusal gate weighs rerank scores on an index without the reranker it was compiled
    with: without one, every passage would read as scored 0 and every question be refused; another model scores on
    a scale the gate was not fitted on. A gate that ignores rerank scores runs with or without one (`load_program`
    says when it differs)."""
    from retrievers.reranker import reranker_record

    configured = reranker_record(index.retriever.reranker)
    # A manifest from before the reranker was recorded: any configured one will do (Cohere's was the only one).
    compiled = manifest.get("reranker", configured or {"kind": "cohere", "model": None})
    if compiled == configured or not compiled_gate(artifact_dir / PROGRAM_FILE).weighs_rerank_scores:
        return
    raise ArtifactError(f"{artifact_dir} has a refusal gate fitted on the rerank scores of "
                        f"{reranker_name(compiled)}, but {reranker_name(configured)} is configured: "
                        f"{reranker_settings(compiled)}recompile with `python optimize.py` to fit a gate on this "
                        "configuration")


def reranker_settings(record: dict | None) -> str:
    """The settings that configure a recorded reranker, as the first fix a message offers ("" for none)."""
    if record is None:
        return ""
    model = f" and COHERE_RERANK_MODEL={record['model']}" if record["model"] else ""
    return f"set COHERE_API_KEY{model} (with BOOKRAG_RERANKER auto or {record['kind']}) to rerank as compiled, or "


def reranker_name(record: dict | None) -> str:
    """A manifest's reranker record as a message names it."""
    if record is None:
        return "no reranker"
    return f"the {record['kind']} reranker {record['model'] or '(its model was not recorded)'}"


def compiled_gate(path: Path):
    """The refusal gate saved in program.json; the default one where it holds none, or one `load_program` refuses."""
    from programs.refusal.refusal_gate import RefusalGate

    try:
        return RefusalGate().load_state(program_state(path).get("gate"))
    except ValueError:
        return RefusalGate()


def compiled_book(manifest: dict) -> Path:
    """The book a program was compiled for (manifests name books inside the project relative to it)."""
    return (PROJECT_ROOT / manifest["book"]).resolve()


def is_collection_of(collection: str, index) -> bool:
    """Whether `collection` is a name this book's index had: its own; the same book's before the project folder
    moved (a path-relative book, another path hash); or the name used before collections carried a path hash."""
    pattern = rf"{re.escape(book_name(index.book_dir))}(-[0-9a-f]{{8}})?__{re.escape(index.embedder.name)}"
    return collection == index.collection or re.fullmatch(pattern, collection) is not None


def compiled_expansion(manifest: dict) -> str:
    """The query expansion a program was compiled with (manifests before it was recorded: none)."""
    return manifest.get("expand") or "none"


def default_artifact(settings: Settings, book_dir: Path) -> Path | None:
    """`artifacts/<book>/` when a program has been compiled for this book (where an optimize killed mid-swap left
    it aside, `folder_to_read`), else None. A folder there without its manifest is an error, as it is with
    --program: running the uncompiled program instead would hide it.

    The folder is named after the book's folder, so it may hold a program compiled for another book of the same
    name: that one is not this book's program (its demos and refusal gate were fitted to other text), so it is
    passed over with a warning, as if none had been compiled; an explicit --program for another book is an error.
    """
    default = folder_to_read(settings.artifacts_dir / book_name(book_dir), settings.data_dir)
    if not default.exists():
        return None
    if not (default / MANIFEST_FILE).exists():  # a FIFO or a folder there is named as such by read_manifest
        raise ArtifactError(f"{default / MANIFEST_FILE} is missing: {default}, the compiled program used by default "
                            f"for this book, is incomplete; recompile with `python optimize.py`, or remove {default} "
                            "to run the uncompiled program")
    if (compiled_for := compiled_book(read_manifest(default))) != Path(book_dir).resolve():
        log.warning("%s was compiled for another book of the same name (%s): answering with the uncompiled program; "
                    "compile one for %s with `python optimize.py --book %s --out DIR` and pass --program DIR",
                    default, compiled_for, book_dir, book_dir)
        return None
    return default


def open_program(settings: Settings, *, book_dir: Path | None = None, artifact: Path | None = None,
                 zero_shot: bool = False, progress: bool | None = None, announce: Callable[[str], None]):
    """What ask.py runs: `artifact` if given; else `artifacts/<book>/` if there is one for this book (unless
    `zero_shot`); else the zero-shot program. Indexes the book first if its collection is missing, its last ingest
    did not finish or the book changed since (after checking the artifact fits, so a mismatch embeds nothing);
    `announce` gets the index's lines for the user."""
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    book_dir = Path(book_dir or settings.book_dir)
    if artifact is None and not zero_shot:
        artifact = default_artifact(settings, book_dir)
    index = BookIndex(settings, book_dir)
    if artifact is not None:
        check_artifact(read_manifest(artifact), artifact, settings, index)
    index.update(announce, progress)
    if artifact is not None:
        return load_program(artifact, settings, index=index)
    return BookRAG.from_settings(settings, index)

