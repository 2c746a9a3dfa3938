"""manifest.json, report.json and program.json are read through `read_json_file` (issue 49): a FIFO, a folder, a
link to a device, a file too large or not UTF-8 is a clear error naming the file and the fix, never a hang, a
MemoryError or exit 70. Every read runs under a time limit, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import os
import threading

import pytest
from conftest import SMALL_BOOK, clean_env, manifest_for, run_script, write_book

from bookrag.config import Settings
from bookrag.errors import ArtifactError, BadArgumentError
from bookrag.json_document import MAX_JSON_FILE_BYTES, UnreadableJSON, read_json_file
from bookrag.output_folder import OutputFolder
from programs.cli.train_reader import READER_OUTPUT
from programs.compile.artifact import (
    ARTIFACT_OUTPUT,
    PROGRAM_FILE,
    load_program,
    write_artifact,
)
from programs.evaluate.report_files import REPORT_OUTPUT
from programs.rag.book_rag import BookRAG

SECONDS = 20  # far above a read of any of these files; a FIFO blocks forever, /dev/zero runs for a minute


def fifo(path):
    os.mkfifo(path)


def latin_1(path):
    path.write_bytes(json.dumps({"lm": "café"}, ensure_ascii=False).encode("latin-1"))


def utf_16(path):
    path.write_bytes(json.dumps({"lm": "local"}).encode("utf-16"))  # with its byte order mark


def folder(path):
    path.mkdir()


def dev_zero(path):
    path.symlink_to("/dev/zero")


def too_large(path):
    with path.open("wb") as handle:
        handle.truncate(MAX_JSON_FILE_BYTES + 1)


# How each file is made, and what the error says of it.
BAD_FILES = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "latin-1": (latin_1, "is not UTF-8 text (byte 0xe9 at offset 11)"),
    "utf-16": (utf_16, "is not UTF-8 text (byte 0xff at offset 0)"),
    "folder": (folder, "is a folder, not a regular file"),
    "dev-zero": (dev_zero, "is a device, not a regular file"),
    "too-large": (too_large, f"is larger than the {MAX_JSON_FILE_BYTES // 2**20} MB a JSON file of bookrag's may be"),
}
bad_files = pytest.mark.parametrize("make, problem", BAD_FILES.values(), ids=BAD_FILES)


def within_seconds(call):
    """`call()`'s value, or its exception raised here; the test fails if it still runs after SECONDS."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SECONDS)
    assert not thread.is_alive(), f"still reading after {SECONDS} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@bad_files
def test_a_json_file_that_cannot_be_one_is_refused_saying_why(tmp_path, make, problem):
    make(tmp_path / "manifest.json")
    with pytest.raises(UnreadableJSON) as caught:
        within_seconds(lambda: read_json_file(tmp_path / "manifest.json"))
    assert str(caught.value) == problem


def test_a_link_to_a_regular_file_is_followed(tmp_path):
    (tmp_path / "real.json").write_text('{"lm": "café"}', encoding="utf-8")
    (tmp_path / "manifest.json").symlink_to(tmp_path / "real.json")
    assert read_json_file(tmp_path / "manifest.json") == {"lm": "café"}


@pytest.fixture
def artifact(small_index, tmp_path):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    return write_artifact(program, tmp_path / "artifacts" / "small", manifest_for(small_index))


@bad_files
@pytest.mark.parametrize("name", ["manifest.json", PROGRAM_FILE])
def test_an_artifact_file_that_cannot_be_read_is_an_artifact_error_naming_it(small_index, artifact, name, make,
                                                                              problem):
    """Latin-1, UTF-16 or a folder ended in exit 70; a FIFO hung; /dev/zero read until MemoryError."""
    (artifact / name).unlink()
    make(artifact / name)
    with pytest.raises(ArtifactError) as caught:
        within_seconds(lambda: load_program(artifact, small_index.settings, index=small_index))
    assert caught.value.exit_code == 2
    assert str(caught.value) == (f"{artifact / name} {problem}: it was hand-edited or is not from bookrag; recompile "
                                 "with `python optimize.py`")


@bad_files
@pytest.mark.parametrize("kind", [REPORT_OUTPUT, ARTIFACT_OUTPUT, READER_OUTPUT],
                         ids=lambda kind: kind.name.replace(" ", "-"))
def test_an_out_folder_whose_marker_cannot_be_read_is_refused_not_waited_on(tmp_path, kind, make, problem):
    """evaluate --out (report.json), optimize and train_reader --out (manifest.json): the claim read it whole."""
    out = tmp_path / "out"
    out.mkdir()
    make(out / kind.marker)
    settings = Settings(book_dir=tmp_path / "book", data_dir=tmp_path / "data")
    with pytest.raises(BadArgumentError) as caught:
        within_seconds(lambda: OutputFolder(out, kind).claim(settings))
    assert caught.value.exit_code == 4
    assert f"--out {out} holds files that are not a bookrag {kind.name} (no {kind.marker} of ours)" in str(caught.value)


# -- the CLIs, in a fresh interpreter each: a FIFO no one writes ------------------------------------------------

def run_cli(tmp_path, *args):
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"))
    return run_script(*args, cwd=tmp_path, env=env, timeout=180)


def test_ask_with_a_fifo_for_the_programs_manifest_exits_2_naming_it(tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    program = tmp_path / "compiled"
    program.mkdir()
    (program / PROGRAM_FILE).write_text("{}")
    fifo(program / "manifest.json")
    done = run_cli(tmp_path, "ask.py", "What is a node?", "--book", book, "--program", program)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(f"error: {program / 'manifest.json'} is a FIFO (named pipe), not a regular file: it was "
                                "hand-edited or is not from bookrag; recompile with `python optimize.py`\n")


@pytest.mark.parametrize("script, kind", [("evaluate.py", REPORT_OUTPUT), ("train_reader.py", READER_OUTPUT)],
                         ids=["evaluate", "train_reader"])
def test_an_out_folder_with_a_fifo_for_its_marker_exits_4_naming_the_folder(tmp_path, script, kind):
    if script == "train_reader.py":
        pytest.importorskip("torch")
    out = tmp_path / "out"
    out.mkdir()
    fifo(out / kind.marker)
    program = ["--baseline", "--book", write_book(tmp_path / "book", SMALL_BOOK)] if script == "evaluate.py" else []
    done = run_cli(tmp_path, script, *program, "--out", out)
    assert done.returncode == 4, done.stderr
    assert f"--out {out} holds files that are not a bookrag {kind.name} (no {kind.marker} of ours)" in done.stderr
