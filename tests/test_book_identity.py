"""Safe with the user's files: one collection per book (two folders of the same name never share one), and no answer
from a book's old text after it was edited (the next open notices and updates the index).

Real folders in tmp, the real embedded store, extractive answers (no LM), the fake embedder."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import FakeEmbedder, write_book

from bookrag.errors import ArtifactError, StoreError
from programs.compile.artifact import (
    MANIFEST_FILE,
    check_artifact,
    default_artifact,
    load_program,
    write_artifact,
)
from programs.rag.book_rag import BookRAG
from retrievers import book_state
from retrievers.book_index import BookIndex
from retrievers.book_state import BookSnapshot
from retrievers.edge_store import EdgeStore
from retrievers.indexer import legacy_collection_name

QUESTION = "How tall is the Quillon robot?"


def robot_book(root, height: str, extra: str = ""):
    return write_book(root, {
        "intro.md": f"""
            # Welcome

            The teaching robot in this book is called Quillon. Quillon is {height} tall. {extra}
            """,
        "02-sim/01-gazebo.md": """
            # Gazebo Physics

            Gazebo simulates gravity, friction and contact between links at 1000 Hz.
            """,
    })


@pytest.fixture
def twin_books(tmp_path):
    """Two books in folders named `book`, under x/ and y/, with different heights for the same robot."""
    return robot_book(tmp_path / "x" / "book", "1.4 m"), robot_book(tmp_path / "y" / "book", "2.7 m")


def ask(index: BookIndex, question: str = QUESTION) -> str:
    program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
    response = program.ask(question)
    assert not response.is_refusal, response.answer
    return response.answer


def open_index(settings, book) -> BookIndex:
    return BookIndex(settings, book, embedder=FakeEmbedder())


def test_two_books_in_folders_of_the_same_name_get_their_own_collections_and_answers(settings, twin_books):
    x, y = twin_books
    with open_index(settings, x) as index_x, open_index(settings, y) as index_y:
        assert index_x.collection != index_y.collection
        assert index_x.collection.startswith("book-") and index_x.collection.endswith("__fake16")
        index_x.ingest(progress=False)
        report = index_y.ingest(progress=False)
        assert report.deleted == 0  # y's ingest did not touch x's chunks
        assert "1.4 m" in ask(index_x) and "2.7 m" not in ask(index_x)
        assert "2.7 m" in ask(index_y) and "1.4 m" not in ask(index_y)
        assert index_x.ingest_state() == index_y.ingest_state() == "complete"


def test_a_collection_whose_record_names_another_book_is_refused_not_overwritten(settings, twin_books):
    """A path-hash collision (or a data folder copied in): the record's book path is checked, not only the name."""
    x, y = twin_books
    with open_index(settings, x) as index_x:
        index_x.ingest(progress=False)
        collection = index_x.collection
    # y's index on x's collection, as if y's path hashed like x's
    with BookIndex(settings, y, embedder=FakeEmbedder(), store=EdgeStore(settings.store_dir, collection)) as impostor:
        with pytest.raises(StoreError, match=f"holds the book at {x.resolve()}.*--recreate"):
            impostor.ingest(progress=False)
        with pytest.raises(StoreError, match="holds the book at"):
            impostor.ingest_state()
    with open_index(settings, x) as index_x:
        assert "1.4 m" in ask(index_x)  # x's index is untouched


def test_an_edited_page_is_noticed_and_the_next_open_answers_from_the_new_text(settings, tmp_path):
    book = robot_book(tmp_path / "book", "3.7 m")
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        assert index.ingest_state() == "complete"
    (book / "intro.md").write_text((book / "intro.md").read_text().replace("3.7 m", "5.2 m"))
    said = []
    with open_index(settings, book) as index:
        assert index.ingest_state() == "changed"
        assert index.changed_files() == ["intro.md"]
        index.update(said.append)
        assert said[0] == "The book changed since it was indexed (1 file(s): intro.md): updating the index ..."
        assert index.ingest_state() == "complete"
        answer = ask(index)
    assert "5.2 m" in answer and "3.7 m" not in answer


@pytest.mark.parametrize("change", ["added", "removed"])
def test_a_new_or_removed_page_counts_as_a_change(settings, tmp_path, change):
    book = robot_book(tmp_path / "book", "1.4 m")
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        if change == "added":
            write_book(book, {"03-arms/01-grippers.md": "# Grippers\n\nThe gripper closes with 40 N of force.\n"})
        else:
            (book / "02-sim" / "01-gazebo.md").unlink()
        expected = ["03-arms/01-grippers.md"] if change == "added" else ["02-sim/01-gazebo.md"]
        assert index.changed_files() == expected
        assert index.ingest_state() == "changed"


def test_a_touched_but_unchanged_file_is_not_a_change(settings, tmp_path):
    book = robot_book(tmp_path / "book", "1.4 m")
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        later = time.time() + 5
        os.utime(book / "intro.md", (later, later))
        assert index.changed_files() == []
        assert index.ingest_state() == "complete"


def test_the_snapshot_keeps_recorded_hashes_of_files_whose_stat_did_not_change(tmp_path):
    book = robot_book(tmp_path / "book", "1.4 m")
    first = BookSnapshot.take(book).record()
    forged = {**first, "intro.md": [*first["intro.md"][:2], "recorded-hash", first["intro.md"][3]]}
    assert BookSnapshot.take(book, forged).record()["intro.md"][2] == "recorded-hash"  # not re-read


def test_an_edit_that_keeps_the_size_and_puts_the_mtime_back_is_noticed(settings, tmp_path):
    """`touch -r`: size and mtime as indexed, the text not; the inode change time moved, so the file is hashed."""
    book = robot_book(tmp_path / "book", "3.7 m")
    page = book / "intro.md"
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        indexed = page.stat()
        time.sleep(0.02)  # past the file system clock's tick, as any real edit after an ingest is
        page.write_text(page.read_text().replace("3.7 m", "5.2 m"))
        os.utime(page, ns=(indexed.st_atime_ns, indexed.st_mtime_ns))
        assert (page.stat().st_size, page.stat().st_mtime_ns) == (indexed.st_size, indexed.st_mtime_ns)
        assert index.ingest_state() == "changed"
        assert index.changed_files() == ["intro.md"]
        index.update(lambda line: None)
        assert "5.2 m" in ask(index) and "3.7 m" not in ask(index)


def test_an_index_recorded_before_ctimes_opens_hashes_each_file_once_and_records_them(settings, tmp_path,
                                                                                     monkeypatch):
    book = robot_book(tmp_path / "book", "1.4 m")
    hashed = []
    hash_file = book_state._sha256
    monkeypatch.setattr(book_state, "_sha256", lambda path: hashed.append(path) or hash_file(path))
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        record = index.store.ingest_record()
        assert all(len(state) == 4 for state in record["files"].values())
        index.store.set_ingest_record({**record, "files": {key: state[:3] for key, state in record["files"].items()}})
        hashed.clear()
        assert index.ingest_state() == "complete"  # each file hashed: unchanged
        assert len(hashed) == 2
        assert index.store.ingest_record() == record  # the ctimes recorded
        hashed.clear()
        assert index.ingest_state() == "complete"
        assert hashed == []  # one stat per file from now on


def test_load_program_updates_a_changed_book_and_still_warns_the_program_was_compiled_on_other_text(
        settings, tmp_path, caplog):
    book = robot_book(tmp_path / "book", "3.7 m")
    with open_index(settings, book) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": index.embedder.name,
                    "collection": index.collection, "book": str(book), "index_fingerprint": index.fingerprint(),
                    "answer_mode": "extractive"}
        artifact = write_artifact(program, tmp_path / "artifacts" / "book", manifest)
    (book / "intro.md").write_text((book / "intro.md").read_text().replace("3.7 m", "5.2 m"))
    with open_index(settings.replace(answer_mode="extractive"), book) as index:
        loaded = load_program(artifact, index.settings, index=index)
        answer = loaded.ask(QUESTION).answer
    assert "5.2 m" in answer and "3.7 m" not in answer
    messages = [r.getMessage() for r in caplog.records]
    assert any("The book changed since it was indexed (1 file(s): intro.md)" in m for m in messages)
    assert any("the book changed since this program was compiled" in m for m in messages)


@pytest.fixture
def artifact_for_x(settings, twin_books, tmp_path):
    """`artifacts/book/` (in tmp), compiled (written) for x/book."""
    x, _ = twin_books
    settings = settings.replace(artifacts_dir=tmp_path / "artifacts")
    with open_index(settings, x) as index:
        index.ingest(progress=False)
        manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": index.embedder.name,
                    "collection": index.collection, "book": str(x), "index_fingerprint": index.fingerprint()}
        program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
        return write_artifact(program, settings.artifacts_dir / "book", manifest)


def test_an_artifact_compiled_for_another_book_of_the_same_name_is_an_artifact_error(settings, twin_books,
                                                                                      artifact_for_x):
    _, y = twin_books
    manifest = json.loads((artifact_for_x / MANIFEST_FILE).read_text())
    with open_index(settings, y) as index_y:
        with pytest.raises(ArtifactError, match=f"compiled for the book at {twin_books[0].resolve()}") as caught:
            check_artifact(manifest, artifact_for_x, settings, index_y)
        assert caught.value.exit_code == 2


def test_the_default_artifact_of_a_namesake_book_is_passed_over_with_a_warning(settings, twin_books, artifact_for_x,
                                                                                 caplog):
    x, y = twin_books
    settings = settings.replace(artifacts_dir=artifact_for_x.parent)
    assert default_artifact(settings, x) == artifact_for_x
    assert default_artifact(settings, y) is None
    assert any("compiled for another book of the same name" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("name", ["before path hashes", "before the project folder moved"])
def test_an_artifact_naming_an_earlier_collection_of_the_same_book_still_loads(settings, small_index, tmp_path, name):
    """Compiled before collections carried a path hash, or (a book named relative to the project) at another path."""
    legacy = legacy_collection_name(small_index.book_dir, small_index.embedder)
    if name == "before the project folder moved":
        legacy = legacy.replace("__", "-0123abcd__")
    manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local",
                "embedder": small_index.embedder.name, "collection": legacy, "book": str(small_index.book_dir),
                "index_fingerprint": small_index.fingerprint(), "answer_mode": "extractive"}
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    artifact = write_artifact(program, tmp_path / "artifacts" / "small", manifest)
    assert load_program(artifact, small_index.settings, index=small_index).manifest["collection"] == legacy


def test_a_collection_left_under_the_old_shared_name_is_named_on_the_first_ingest(settings, small_book, caplog):
    legacy = legacy_collection_name(small_book, FakeEmbedder())
    old = EdgeStore(settings.store_dir, legacy)
    old.create(16)
    old.close()
    with open_index(settings, small_book) as index:
        index.ingest(progress=False)
    assert any(legacy in r.getMessage() and "no longer used" in r.getMessage() for r in caplog.records)
    assert (settings.store_dir / legacy).is_dir()  # left for the user (an older bookrag may still use it)
