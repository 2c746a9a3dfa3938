"""Reading a book safely (issue 38): only regular files inside the book folder are listed, stat'ed, hashed or read,
so a named pipe or a link to a device never hangs an ingest or the "did the book change?" check before an answer,
and a folder far larger than any book is refused before anything is read.

Every operation that used to hang runs under a time limit: a regression fails the test instead of hanging CI."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT, SMALL_BOOK, FakeEmbedder, clean_env, run_script, write_book

from retrievers import indexer
from retrievers.book_files import MAX_FILES, book_files
from retrievers.book_index import BookIndex

HANG_LIMIT_S = 20  # a walk, hash and ingest of the small book takes well under a second


class Hangs(Exception):
    """Not an OSError (as TimeoutError is): the code under test catches those while it reads a file."""


@contextlib.contextmanager
def time_limit(seconds: int = HANG_LIMIT_S):
    def expire(signum, frame):
        raise Hangs(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def add_odd_page(book, kind: str) -> str:
    """A `.md` that is no text: a named pipe (nothing ever writes to it) or a link to /dev/zero (it never ends)."""
    if kind == "pipe":
        os.mkfifo(book / "odd.md")
        return "a named pipe, not a regular file"
    (book / "odd.md").symlink_to("/dev/zero")
    return "it links to /dev/zero, outside the book folder"


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_only_regular_files_inside_the_book_are_listed_and_the_others_say_why(tmp_path):
    book = write_book(tmp_path / "book", {"a.md": "# A\n", "sub/b.md": "# B\n"})
    outside = write_book(tmp_path / "elsewhere", {"notes.md": "# Private\n"}) / "notes.md"
    os.mkfifo(book / "pipe.md")
    (book / "zero.md").symlink_to("/dev/zero")
    (book / "leak.md").symlink_to(outside)
    (book / "alias.md").symlink_to(book / "a.md")  # a link inside the book is just another file
    (book / "gone.md").symlink_to(book / "missing.md")
    (book / "loop.md").symlink_to(book / "loop.md")
    (book / "chapters").symlink_to(book / "sub")  # a link to a folder is not followed
    walked = book_files(book)
    assert [file.rel for file in walked.files] == ["a.md", "alias.md", "sub/b.md"]
    assert walked.skipped == {
        "pipe.md": "a named pipe, not a regular file",
        "zero.md": "it links to /dev/zero, outside the book folder",
        "leak.md": f"it links to {outside.resolve()}, outside the book folder",
        "gone.md": "cannot be read (No such file or directory)",
        "loop.md": "cannot be read (Too many levels of symbolic links)",
        "chapters": "a link to a folder, not a regular file",
    }


@pytest.mark.parametrize("kind", ["pipe", "dev-zero"])
def test_an_ingest_skips_a_named_pipe_or_a_link_to_a_device_named_md_with_a_warning(settings, tmp_path, kind, caplog):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    why = add_odd_page(book, kind)
    with BookIndex(settings, book, embedder=FakeEmbedder()) as index, time_limit():
        report = index.ingest(progress=False)
        record = index.store.ingest_record()
    assert report.files == 4 and report.errors == []
    assert "odd.md" not in record["files"]
    assert f"skipped odd.md: {why}" in warnings_of(caplog)


@pytest.mark.parametrize("kind", ["pipe", "dev-zero"])
def test_the_check_before_an_answer_does_not_hang_on_a_pipe_or_device_added_after_indexing(settings, tmp_path, kind):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    said = []
    with BookIndex(settings, book, embedder=FakeEmbedder()) as index:
        index.ingest(progress=False)
        add_odd_page(book, kind)
        with time_limit():
            assert index.ingest_state() == "complete"  # not a file of the book: nothing changed
            assert index.update(said.append) is None
    assert said == []


def test_the_ingest_command_finishes_on_a_book_holding_a_named_pipe(tmp_path):
    """`mkfifo book/pipe.md` blocked `python ingest.py book` forever (also `--book /tmp` with a pipe in /tmp)."""
    book = write_book(tmp_path / "book", {"intro.md": SMALL_BOOK["intro.md"]})
    os.mkfifo(book / "pipe.md")
    result = run_script("ingest.py", book, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")),
                        timeout=90)
    assert result.returncode == 0, result.stderr
    assert "skipped pipe.md: a named pipe, not a regular file" in result.stderr
    assert "files 1, chunks 2, embedded 2" in result.stdout


BOUNDED_INGEST = """
import sys
import retrievers.book_files
retrievers.book_files.MAX_FILES = 30  # the real bound, 100,000, takes a big folder to reach
from programs.cli import ingest
from bookrag.cli import run
run(ingest.main)
"""


def test_a_folder_of_more_files_than_any_book_is_refused_with_exit_4_before_anything_is_read(tmp_path):
    """`python ingest.py /` walked, hashed and read the whole disk without a word; past the bound it stops at once."""
    folder = write_book(tmp_path / "home", {"notes.md": "# Notes\n\nA page.\n",
                                            **{f"photos/{i}.jpg": "not text" for i in range(30)}})
    data = tmp_path / "data"
    result = subprocess.run([sys.executable, "-c", BOUNDED_INGEST, str(folder)], cwd=PROJECT_ROOT,
                            env=clean_env(BOOKRAG_DATA_DIR=str(data)), capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 4, result.stderr
    assert result.stderr == (
        f"error: {folder} holds more than 30 files, more than any book: pass the folder that holds the book's "
        ".md/.mdx pages (a Docusaurus or MkDocs docs/ folder, an mdBook src/ folder)\n")
    assert result.stdout == "" and not list(data.rglob("*.ingest.json"))


def test_a_book_of_20000_files_is_walked_whole(tmp_path):
    """The bound is far above real books: the probe's 20,000-file book still reads."""
    book = tmp_path / "big-book"
    for chapter in range(20):
        folder = book / f"chapter-{chapter:02}"
        folder.mkdir(parents=True)
        for page in range(1000):
            (folder / f"page-{page:04}.md").write_bytes(b"# Page\n")
    assert MAX_FILES >= 20_000
    walked = book_files(book)
    assert len(walked.files) == 20_000 and walked.skipped == {}
    assert walked.files[0].rel == "chapter-00/page-0000.md" and walked.files[-1].rel == "chapter-19/page-0999.md"


@pytest.mark.parametrize("top_page", [False, True])
def test_an_ingest_of_many_files_and_no_page_at_the_top_warns_that_it_may_not_be_the_book(
        settings, tmp_path, monkeypatch, caplog, top_page):
    monkeypatch.setattr(indexer, "MANY_FILES", 5)
    pages = {"docs/intro.md": "# Intro\n\nThe robot walks.\n", **{f"data/{i}.csv": "1,2\n" for i in range(5)}}
    folder = write_book(tmp_path / "home", {**pages, **({"index.md": "# Home\n\nHello.\n"} if top_page else {})})
    with BookIndex(settings, folder, embedder=FakeEmbedder()) as index:
        index.ingest(progress=False)
    warning = (f"{folder} holds 6 files and no .md/.mdx page at its top: is it the book? Indexing reads every "
               "file; if it is not, stop it (Ctrl-C) and pass the folder that holds the book's pages")
    assert [m for m in warnings_of(caplog) if "no .md/.mdx page at its top" in m] == ([] if top_page else [warning])
