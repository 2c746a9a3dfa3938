"""`--out` never costs the user a file (issue 38): a folder holding an artifact and the user's own files is refused,
not emptied; `~` is the user's home; a folder inside the book is refused; a symbolic link is written through."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from conftest import (
    SMALL_BOOK,
    clean_env,
    killed_between_renames,
    manifest_for,
    run_evaluate,
    run_script,
    write_book,
)
from question_files import write_questions

from bookrag.atomic_file import folder_to_read
from bookrag.config import Settings
from bookrag.errors import ArtifactError, BadArgumentError
from bookrag.output_folder import OutputFolder
from programs.cli import evaluate, optimize
from programs.compile.artifact import (
    ARTIFACT_OUTPUT,
    MANIFEST_FILE,
    MANIFEST_KEYS,
    PROGRAM_FILE,
    read_manifest,
    write_artifact,
)
from programs.evaluate.report_files import REPORT_OUTPUT
from programs.rag.book_rag import BookRAG


def a_program(index) -> BookRAG:
    return BookRAG(index.retriever, lm=None, answer_mode="extractive")


def add_the_users_files(folder: Path) -> dict[str, bytes]:
    """The files issue 38 lost, and their bytes."""
    (folder / "thesis.docx").write_bytes(b"PK\x03\x04 my thesis")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    (folder / ".my_notes").write_text("call the lab")
    return users_files(folder)


def users_files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in ("thesis.docx", "sub/data.csv", ".my_notes")}


def run_optimize(tmp_path: Path, book: Path, out, home: Path | None = None):
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "cli-data"), **({"HOME": str(home)} if home else {}))
    return run_script("optimize.py", "--book", book, "--questions", write_questions(tmp_path / "questions.csv"),
                      "--out", out, cwd=tmp_path, env=env, timeout=180)


# -- 1. an artifact folder that also holds the user's files ------------------------------------------------------

def test_optimize_refuses_an_artifact_folder_that_also_holds_the_users_files_and_keeps_them(
        small_index, small_book, tmp_path):
    """The new artifact replaces the whole folder (so a killed run leaves the old one usable): the folder may hold
    nothing else. Refused before any work, naming the files."""
    out = write_artifact(a_program(small_index), tmp_path / "art", manifest_for(small_index))
    previous = {name: (out / name).read_bytes() for name in (MANIFEST_FILE, PROGRAM_FILE)}
    mine = add_the_users_files(out)
    done = run_optimize(tmp_path, small_book, out)
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"error: --out {out} holds files bookrag did not write (.my_notes, sub/, thesis.docx) "
                           "beside its compiled program, and a new one replaces the whole folder: move them out, or "
                           "name another folder\n")
    assert users_files(out) == mine
    assert {name: (out / name).read_bytes() for name in previous} == previous
    assert not (tmp_path / "cli-data" / "qdrant").exists()  # refused before the ingest


def test_write_artifact_never_deletes_files_beside_a_previous_artifact(small_index, tmp_path):
    out = write_artifact(a_program(small_index), tmp_path / "out" / "art", manifest_for(small_index))
    mine = add_the_users_files(out)
    with pytest.raises(BadArgumentError, match=r"holds files bookrag did not write \(\.my_notes, sub/, thesis\.docx"):
        write_artifact(a_program(small_index), out, manifest_for(small_index, lm="openai/gpt-4o-mini"))
    assert users_files(out) == mine and read_manifest(out)["lm"] == "local"
    assert sorted(p.name for p in out.parent.iterdir()) == ["art"]  # no staging folder left


def test_a_long_list_of_the_users_files_is_cut_short_with_a_count(tmp_path):
    out = tmp_path / "art"
    out.mkdir()
    (out / MANIFEST_FILE).write_text(json.dumps(dict.fromkeys(MANIFEST_KEYS, "x")))
    for n in range(8):
        (out / f"photo{n}.jpg").write_bytes(b"\xff\xd8")
    settings = Settings(book_dir=write_book(tmp_path / "book", SMALL_BOOK), data_dir=tmp_path / "data")
    with pytest.raises(BadArgumentError) as caught:
        OutputFolder(out, ARTIFACT_OUTPUT).claim(settings)
    assert "(photo0.jpg, photo1.jpg, photo2.jpg, photo3.jpg, photo4.jpg and 3 more)" in str(caught.value)


# -- 8c. `~` is the user's home ------------------------------------------------------------------------------------

def test_a_quoted_tilde_in_optimize_path_flags_is_the_users_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_book(tmp_path / "home" / "book", SMALL_BOOK)
    args = optimize.build_parser().parse_args(["--out", "~/art", "--questions", "~/q.csv", "--book", "~/book"])
    assert (args.out, args.questions, args.book) == (tmp_path / "home" / "art", tmp_path / "home" / "q.csv",
                                                    tmp_path / "home" / "book")


def test_a_quoted_tilde_in_evaluate_path_flags_is_the_users_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_book(tmp_path / "home" / "book", SMALL_BOOK)
    args = evaluate.build_parser().parse_args(["--out", "~/r", "--questions", "~/q.csv", "--book", "~/book",
                                               "--program", "~/art"])
    assert (args.out, args.questions, args.book, args.program) == (
        tmp_path / "home" / "r", tmp_path / "home" / "q.csv", tmp_path / "home" / "book", tmp_path / "home" / "art")
    compared = evaluate.build_parser().parse_args(["--compare", "zero-shot", "~/art"])
    assert evaluate.program_specs(compared) == ["zero-shot", str(tmp_path / "home" / "art")]


def test_optimize_out_tilde_is_the_home_folder_and_makes_no_folder_named_tilde(tmp_path):
    """`--out '~'` (quoted: the shell left it alone) names the home folder, which holds the user's files: refused."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.docx").write_bytes(b"mine")
    book = write_book(tmp_path / "book", SMALL_BOOK)
    done = run_optimize(tmp_path, book, "~", home=home)
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"error: --out {home} holds files that are not a bookrag compiled program")
    assert not (tmp_path / "~").exists() and (home / "thesis.docx").read_bytes() == b"mine"


# -- 8d. an --out inside the book ----------------------------------------------------------------------------------

def test_optimize_out_inside_the_book_is_refused_naming_the_book(tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    done = run_optimize(tmp_path, book, book / "compiled")
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"error: --out {book / 'compiled'} is inside the book ({book}): what bookrag writes "
                           "there would be read as part of the book on the next run; name a folder outside it\n")
    assert not (book / "compiled").exists() and not (tmp_path / "cli-data" / "qdrant").exists()


def test_a_report_folder_inside_the_book_is_refused_too_even_through_a_link(tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    settings = Settings(book_dir=book, data_dir=tmp_path / "data")
    (tmp_path / "reports").symlink_to(book / "01-ros2")
    for out in (book / "01-ros2" / "reports", tmp_path / "reports" / "run1"):
        with pytest.raises(BadArgumentError, match=r"is inside the book \(.*\): what bookrag writes there would be read") as caught:
            OutputFolder(out, REPORT_OUTPUT).claim(settings)
        assert caught.value.exit_code == 4
    assert sorted(p.name for p in (book / "01-ros2").iterdir()) == ["01-nodes.md", "02-launch.md"]


# -- 8e. a symbolic link as --out ----------------------------------------------------------------------------------

@pytest.fixture
def linked_artifact(small_index, tmp_path) -> tuple[Path, Path]:
    """artifacts/small -> elsewhere/small, a folder holding a previous artifact."""
    target = write_artifact(a_program(small_index), tmp_path / "elsewhere" / "small", manifest_for(small_index))
    link = tmp_path / "artifacts" / "small"
    link.parent.mkdir()
    link.symlink_to(target)
    return link, target


def test_an_artifact_written_through_a_link_replaces_the_folder_it_names_and_keeps_the_link(
        small_index, linked_artifact, caplog):
    link, target = linked_artifact
    with caplog.at_level(logging.WARNING):
        written = write_artifact(a_program(small_index), link, manifest_for(small_index, lm="openai/gpt-4o-mini"))
    assert written == link and link.is_symlink() and Path(os.readlink(link)) == target
    assert read_manifest(target)["lm"] == "openai/gpt-4o-mini" and read_manifest(link)["lm"] == "openai/gpt-4o-mini"
    assert caplog.records == []  # no word about a previous artifact moved aside
    assert sorted(p.name for p in link.parent.iterdir()) == ["small"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["small"]  # no .old-* nor .writing-* left


def test_a_link_to_a_folder_not_yet_made_is_written_through(small_index, tmp_path):
    link = tmp_path / "art"
    link.symlink_to(tmp_path / "big-disk" / "art")
    write_artifact(a_program(small_index), link, manifest_for(small_index))
    assert link.is_symlink() and read_manifest(tmp_path / "big-disk" / "art")["lm"] == "local"


def test_a_write_through_a_link_killed_between_its_renames_is_read_through_the_link(linked_artifact, data_dir):
    link, target = linked_artifact
    killed_between_renames(target, data_dir)
    aside = folder_to_read(link, data_dir)
    assert aside.parent == target.parent and read_manifest(aside)["lm"] == "local"
    assert not target.exists() and link.is_symlink()  # a reader moves nothing


def test_a_link_to_the_users_folder_is_refused_naming_the_link_and_its_target(tmp_path):
    settings = Settings(book_dir=write_book(tmp_path / "book", SMALL_BOOK), data_dir=tmp_path / "data")
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    (tmp_path / "out").symlink_to(tmp_path / "photos")
    with pytest.raises(BadArgumentError) as caught:
        OutputFolder(tmp_path / "out", ARTIFACT_OUTPUT).claim(settings)
    assert str(caught.value).startswith(f"--out {tmp_path / 'out'} (a link to {tmp_path / 'photos'}) holds files "
                                        "that are not a bookrag compiled program")
    assert (tmp_path / "photos" / "cat.jpg").read_bytes() == b"\xff\xd8"


def test_a_link_that_loops_is_refused_not_a_crash(tmp_path):
    settings = Settings(book_dir=write_book(tmp_path / "book", SMALL_BOOK), data_dir=tmp_path / "data")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(BadArgumentError, match=r"is a loop of symbolic links: point it at a folder, or name another"):
        OutputFolder(tmp_path / "a", ARTIFACT_OUTPUT).claim(settings)


# -- 1, for evaluate.py: its report folder is written file by file, so the user's files in it are kept -----------

def test_evaluate_replaces_only_its_own_files_in_a_report_folder_and_keeps_the_users(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    written = sorted(p.name for p in workspace["out"].iterdir())
    mine = add_the_users_files(workspace["out"])
    assert run_evaluate(workspace, "--baseline", "--json") == 0
    assert users_files(workspace["out"]) == mine
    assert sorted(p.name for p in workspace["out"].iterdir()) == sorted([*written, "thesis.docx", "sub", ".my_notes"])
    assert list(json.loads((workspace["out"] / "report.json").read_text())["programs"]) == ["baseline"]


# -- issue 43: only what a swap of ours staged is removed or restored ----------------------------------------------

def users_look_alikes(out: Path) -> dict[Path, bytes]:
    """Folders of the user's beside `out`, named as bookrag's swap names its own."""
    files = {}
    for name in (f".{out.name}.old-mine", f".{out.name}.old-deadbeef", f".{out.name}.writing-backup"):
        (out.parent / name).mkdir(parents=True)
        files[out.parent / name / "thesis.docx"] = f"my thesis, in {name}".encode()
    for path, data in files.items():
        path.write_bytes(data)
    return files


def test_the_users_look_alike_folders_beside_an_artifact_are_kept_when_it_is_rewritten(small_index, tmp_path):
    out = write_artifact(a_program(small_index), tmp_path / "out" / "art", manifest_for(small_index))
    mine = users_look_alikes(out)
    write_artifact(a_program(small_index), out, manifest_for(small_index, lm="openai/gpt-4o-mini"))
    assert {path: path.read_bytes() for path in mine} == mine
    assert read_manifest(out)["lm"] == "openai/gpt-4o-mini"
    assert sorted(p.name for p in out.parent.iterdir()) == [".art.old-deadbeef", ".art.old-mine",
                                                         ".art.writing-backup", "art"]
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST_FILE, PROGRAM_FILE]  # no mark of the swap left


def test_the_users_look_alike_folder_is_not_restored_in_place_of_a_missing_artifact(small_index, tmp_path):
    """Nothing there yet: a new artifact is written, the user's `.art.old-*` is neither moved nor removed."""
    out = tmp_path / "out" / "art"
    mine = users_look_alikes(out)
    with pytest.raises(ArtifactError, match="no compiled program at"):
        read_manifest(out)
    write_artifact(a_program(small_index), out, manifest_for(small_index))
    assert {path: path.read_bytes() for path in mine} == mine
    assert read_manifest(out)["lm"] == "local"
