"""Incremental ingest into the embedded store, crash safety, and the `python ingest.py` command line."""

from __future__ import annotations

import fcntl
import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter

import pytest
from conftest import PROJECT_ROOT, SMALL_BOOK, FakeEmbedder, clean_env, run_script, write_book
from qdrant_client import QdrantClient

from bookrag.config import Settings
from bookrag.errors import EmbeddingError, StoreError
from retrievers.book_index import BookIndex
from retrievers.edge_store import EdgeStore
from retrievers.indexer import collection_name, read_book
from retrievers.minilm_embedder import MiniLMEmbedder
from retrievers.server_store import ServerStore

GAZEBO = "02-sim/01-gazebo.md"


def ingest(settings, book, embedder=None, **kwargs):
    embedder = embedder or FakeEmbedder()
    with BookIndex(settings, book, embedder=embedder) as index:
        report = index.ingest(progress=False, **kwargs)
        points = {hit.id: hit.payload for hit in index.store.scan()}
        assert index.store.count() == len(points)
    return report, points, embedder


def book_chunks(settings, book):
    chunks, errors, _ = read_book(book, settings)
    assert not errors
    return {c.id: c for c in chunks}


def test_first_ingest_embeds_every_chunk(settings, small_book):
    report, points, embedder = ingest(settings, small_book)
    expected = book_chunks(settings, small_book)
    assert report.files == 4
    assert report.chunks == report.embedded == len(expected) == embedder.documents_embedded
    assert (report.skipped, report.updated, report.deleted, report.errors) == (0, 0, 0, [])
    assert set(points) == set(expected)
    assert all(points[i] == c.payload() for i, c in expected.items())


def test_second_run_embeds_nothing_and_reports_all_skipped(settings, small_book):
    first, points_before, _ = ingest(settings, small_book)
    report, points_after, embedder = ingest(settings, small_book)
    assert embedder.document_batches == []
    assert report.embedded == report.updated == report.deleted == 0
    assert report.skipped == report.chunks == first.chunks
    assert points_after == points_before
    assert f"skipped {report.chunks}" in report.summary()


def test_changing_one_file_reembeds_only_its_changed_chunks(settings, small_book):
    ingest(settings, small_book)
    before = book_chunks(settings, small_book)
    page = small_book / GAZEBO
    page.write_text(page.read_text().replace("noisy measurements", "calibrated measurements"))
    after = book_chunks(settings, small_book)
    new_ids, gone_ids = set(after) - set(before), set(before) - set(after)
    assert len(new_ids) == len(gone_ids) == 1

    report, points, embedder = ingest(settings, small_book)
    assert report.embedded == embedder.documents_embedded == 1
    assert embedder.document_batches == [[after[i].embedding_text for i in new_ids]]
    assert after[next(iter(new_ids))].source == GAZEBO
    assert report.deleted == 1 and report.skipped == len(after) - 1
    assert set(points) == set(after)


def test_deleting_a_file_deletes_its_points(settings, small_book):
    _, points, _ = ingest(settings, small_book)
    launch = [i for i, p in points.items() if p["source"] == "01-ros2/02-launch.md"]
    assert launch
    (small_book / "01-ros2" / "02-launch.md").unlink()

    report, points, embedder = ingest(settings, small_book)
    assert report.deleted == len(launch)
    assert embedder.document_batches == []
    assert not any(p["source"] == "01-ros2/02-launch.md" for p in points.values())
    assert set(points) == set(book_chunks(settings, small_book))


def test_changing_only_the_front_matter_title_updates_payloads_without_embedding(settings, small_book):
    _, before, _ = ingest(settings, small_book)
    page = small_book / GAZEBO
    page.write_text(page.read_text().replace("title: Gazebo Physics", "title: Physics in Gazebo"))

    report, after, embedder = ingest(settings, small_book)
    gazebo_ids = {i for i, p in before.items() if p["source"] == GAZEBO}
    assert embedder.document_batches == []
    assert report.embedded == report.deleted == 0
    assert report.updated == len(gazebo_ids) == 2
    assert set(after) == set(before)
    assert {after[i]["title"] for i in gazebo_ids} == {"Physics in Gazebo"}
    assert all(after[i] == before[i] for i in before if i not in gazebo_ids)


def test_recreate_drops_the_collection_and_embeds_everything_again(settings, small_book):
    first, _, _ = ingest(settings, small_book)
    report, points, embedder = ingest(settings, small_book, recreate=True)
    assert report.embedded == embedder.documents_embedded == first.chunks
    assert report.skipped == 0
    assert set(points) == set(book_chunks(settings, small_book))


def test_a_file_that_fails_to_parse_loses_its_old_points_and_is_reported(settings, small_book):
    """Its old points would answer from text the page may no longer hold (issue 43)."""
    _, before, _ = ingest(settings, small_book)
    gazebo_before = [i for i, p in before.items() if p["source"] == GAZEBO]
    (small_book / GAZEBO).write_text("---\ntitle: [broken\n---\n# Gazebo\n\nNew text that must not be indexed.\n")
    launch = small_book / "01-ros2" / "02-launch.md"
    launch.write_text(launch.read_text().replace("at once", "together"))

    report, after, embedder = ingest(settings, small_book)
    assert [e.source for e in report.errors] == [GAZEBO]
    assert "1 file(s) skipped with errors" in report.summary()
    assert report.files == 3
    assert gazebo_before and not any(p["source"] == GAZEBO for p in after.values())
    assert report.removed == {GAZEBO: len(gazebo_before)}
    assert report.skipped_lines()[0].endswith(f"; its {len(gazebo_before)} passage(s) indexed before were removed "
                                              "from the index")
    assert report.embedded == embedder.documents_embedded == 1
    assert not any("must not be indexed" in text for batch in embedder.document_batches for text in batch)
    assert any("together with their parameters" in p["text"] for p in after.values())
    assert not any("at once" in p["text"] for p in after.values())


GAZEBO_QUESTION = "What does Gazebo simulate: rigid body physics, gravity, friction?"


def resave_as_latin1(page) -> None:
    """The page saved again by an editor set to Latin-1: no longer UTF-8 (its text gains an accented word)."""
    page.write_bytes((page.read_text(encoding="utf-8") + "\nA café in the simulated world.\n").encode("latin-1"))


def test_a_page_that_stops_being_utf8_loses_its_passages_and_every_refresh_says_why(settings, small_book):
    """It kept its old chunks: the first ask warned that it was skipped, the second answered from the old text,
    silently, citing the page (issue 43). Every refresh (ask's, load_program's) reads it again and says so again."""
    reason = r"not UTF-8 text \(byte \d+\); re-save the file as UTF-8"
    said = []
    with BookIndex(settings, small_book, embedder=FakeEmbedder()) as index:
        index.update(said.append)
        assert GAZEBO in {p.source for p in index.retriever.search(GAZEBO_QUESTION)}
        resave_as_latin1(small_book / GAZEBO)
        said.clear()
        index.update(said.append)  # the first ask after the edit
        assert said[0] == f"The book changed since it was indexed (1 file(s): {GAZEBO}): updating the index ..."
        assert re.fullmatch(f"skipped {GAZEBO}: {reason}; its 2 passage\\(s\\) indexed before were removed from "
                            "the index", said[-1])
        for _ in range(2):  # the asks after it: the page is still unreadable
            assert GAZEBO not in {p.source for p in index.retriever.search(GAZEBO_QUESTION, k=10)}
            assert index.ingest_state() == "changed"
            said.clear()
            index.update(said.append)
            assert said[0] == f"Reading again the 1 page(s) the last ingest could not read ({GAZEBO}) ..."
            assert re.fullmatch(f"skipped {GAZEBO}: {reason}", said[-1])
        page = small_book / GAZEBO
        page.write_text(page.read_bytes().decode("latin-1"), encoding="utf-8")  # fixed
        said.clear()
        index.update(said.append)
        assert said[0] == f"Reading again the 1 page(s) the last ingest could not read ({GAZEBO}) ..."
        assert not [line for line in said if line.startswith("skipped")]
        assert GAZEBO in {p.source for p in index.retriever.search(GAZEBO_QUESTION)}
        assert index.ingest_state() == "complete"


def test_ask_does_not_answer_from_a_page_that_stopped_being_utf8_and_names_it_each_time(tmp_path, small_book):
    """The issue's reproduction: ingest.py, the page re-saved as Latin-1, then ask.py twice (MiniLM)."""
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_BOOK=str(small_book),
                    BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"))
    assert run_script("ingest.py", small_book, cwd=tmp_path, env=env, timeout=180).returncode == 0
    resave_as_latin1(small_book / GAZEBO)
    for _ in range(2):
        asked = run_script("ask.py", GAZEBO_QUESTION, "--json", cwd=tmp_path, env=env, timeout=180)
        assert asked.returncode in (0, 1), asked.stderr
        response = json.loads(asked.stdout)
        assert GAZEBO not in {c["source"] for c in response["citations"]} | {p["source"] for p in response["passages"]}
        assert f"skipped {GAZEBO}: not UTF-8 text" in asked.stderr


def test_a_store_of_another_dimension_is_a_clear_error(settings, small_book):
    ingest(settings, small_book)

    class Fake8(FakeEmbedder):
        dim = 8  # same name, so the same collection, but 8-d vectors

    with pytest.raises(StoreError, match="16-d vectors.*8-d.*--recreate"):
        ingest(settings, small_book, embedder=Fake8())


def test_ingest_of_a_missing_or_empty_folder_is_a_bad_argument(settings, tmp_path):
    from bookrag.errors import BadArgumentError

    with pytest.raises(BadArgumentError, match="does not exist"):
        ingest(settings, tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadArgumentError, match="no .md or .mdx files"):
        ingest(settings, tmp_path / "empty")


def test_a_book_whose_pages_hold_no_text_is_a_bad_argument_and_leaves_the_index_as_it_was(settings, small_book):
    from bookrag.errors import BadArgumentError

    _, before, _ = ingest(settings, small_book)
    for page in small_book.rglob("*.md"):
        page.write_text("" if page.name != "intro.md" else "---\ntitle: Welcome\n---\n\n   \n")
    with pytest.raises(BadArgumentError, match=f"no text to index in {small_book}: of its 4 .md/.mdx file"):
        ingest(settings, small_book)
    with BookIndex(settings, small_book, embedder=FakeEmbedder()) as index:
        assert {hit.id for hit in index.store.scan()} == set(before)  # an empty book is not a deletion


# -- crash safety --------------------------------------------------------------------------------------------

KILL_DRIVER = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{tests!r}, {root!r}]
    from pathlib import Path
    from conftest import FakeEmbedder
    from bookrag.config import Settings
    from retrievers.book_index import BookIndex
    from retrievers.backends import make_embedder

    class Announcing:
        \"\"\"The configured embedder (MiniLM), slowed down and announcing each batch like the fake one.\"\"\"

        def __init__(self, inner, delay):
            self.inner, self.delay, self.batches = inner, delay, 0
            self.name, self.model_id, self.dim = inner.name, inner.model_id, inner.dim

        def embed_documents(self, texts):
            self.batches += 1
            print(f"embedding batch {{self.batches}} ({{len(texts)}} texts)", flush=True)
            time.sleep(self.delay)
            return self.inner.embed_documents(texts)

    # The real indexer and store; only the embedder is slow, and announces each batch.
    settings = Settings(data_dir=Path(sys.argv[1]))
    delay = float(sys.argv[3])
    embedder = (FakeEmbedder(delay=delay, announce=True) if sys.argv[4] == "fake"
                else Announcing(make_embedder(settings), delay))
    with BookIndex(settings, Path(sys.argv[2]), embedder=embedder) as index:
        print("done", index.ingest(progress=False).summary(), flush=True)
""")


def big_book(root, pages: int = 200):
    """`pages` pages of two sections each: one chunk per section."""
    return write_book(root, {
        f"{i // 25:02d}-part/{i:03d}-page.md": f"# Page {i}\n\n## First\n\nPage {i} opens with word{i}a.\n\n"
                                               f"## Second\n\nPage {i} closes with word{i}b.\n"
        for i in range(pages)
    })


def kill_ingest_during_its_second_batch(tmp_path, settings, book, embedder: str = "fake") -> None:
    """Run an ingest in a child process and SIGKILL it once its first batch is upserted (batch 2 starts only
    after batch 1 was upserted). `embedder`: `fake` (the slow FakeEmbedder) or `configured` (MiniLM, slowed)."""
    driver = tmp_path / "driver.py"
    driver.write_text(KILL_DRIVER.format(tests=str(PROJECT_ROOT / "tests"), root=str(PROJECT_ROOT)))
    announced = []
    with subprocess.Popen([sys.executable, str(driver), str(settings.data_dir), str(book), "1.0", embedder],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()) as proc:
        watchdog = threading.Timer(120, proc.kill)  # never hang the suite on a stuck child
        watchdog.start()
        try:
            for line in proc.stdout:
                announced.append(line)
                if line.startswith("embedding batch 2"):
                    proc.send_signal(signal.SIGKILL)
                    break
            proc.wait(timeout=30)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
        stderr = proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL, (announced, stderr)


def test_ingest_killed_after_its_first_batch_is_marked_incomplete_and_the_next_run_completes_it(tmp_path):
    book = big_book(tmp_path / "big-book")
    settings = Settings(data_dir=tmp_path / "data")
    expected = book_chunks(settings, book)
    assert len(expected) == 400  # EMBED_BATCH is 64: the kill lands with 6 of 7 batches to go
    kill_ingest_during_its_second_batch(tmp_path, settings, book)

    with BookIndex(settings, book, embedder=FakeEmbedder()) as index:
        survived = index.store.count()
        # The first batch survived the kill (a second one only if this machine was too busy to kill in time).
        assert survived in (64, 128)
        assert index.ingest_state() == "incomplete"
        report = index.ingest(progress=False)
        assert index.ingest_state() == "complete"
        ids = [hit.id for hit in index.store.scan()]
        assert index.store.count() == len(ids) == len(expected)
        assert len(set(ids)) == len(ids)
        assert set(ids) == set(expected)
        assert (report.skipped, report.embedded) == (survived, len(expected) - survived)
        hits = index.retriever.search("word7a", k=1, mode="sparse")
        assert hits[0].source == "00-part/007-page.md"


def test_load_program_on_an_index_whose_ingest_was_killed_says_how_to_complete_it(tmp_path):
    from dspy.utils import DummyLM

    from bookrag.errors import ArtifactError
    from programs.compile.artifact import load_program, write_artifact
    from programs.rag.book_rag import BookRAG

    book = big_book(tmp_path / "big-book")
    settings = Settings(data_dir=tmp_path / "data")
    kill_ingest_during_its_second_batch(tmp_path, settings, book)

    with BookIndex(settings, book, embedder=FakeEmbedder()) as index:
        manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": "fake16",
                    "collection": index.collection, "book": str(book), "index_fingerprint": "compiled-elsewhere",
                    "answer_mode": "extractive"}
        artifact = write_artifact(BookRAG(index.retriever), tmp_path / "artifacts" / "big-book", manifest)
        with pytest.raises(ArtifactError, match=r"did not finish.*python ingest.py") as caught:
            load_program(artifact, settings, index=index, lm=DummyLM([]))
        assert str(book) in str(caught.value)
        index.ingest(progress=False)
        assert load_program(artifact, settings, index=index, lm=DummyLM([])).index is index


def test_ask_after_an_ingest_killed_midway_completes_it_before_answering(tmp_path):
    """The issue's reproduction: `python ingest.py` killed with SIGKILL partway, then `python ask.py`."""
    book = big_book(tmp_path / "book", pages=100)
    settings = Settings(data_dir=tmp_path / "data")
    kill_ingest_during_its_second_batch(tmp_path, settings, book, embedder="configured")

    env = clean_env(BOOKRAG_DATA_DIR=str(settings.data_dir), BOOKRAG_BOOK=str(book),
                    BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"), BOOKRAG_ANSWER_MODE="extractive")
    asked = run_script("ask.py", "What is the capital city of Australia?", "--json", cwd=tmp_path, env=env,
                       timeout=180)
    assert asked.returncode in (0, 1), asked.stderr
    assert "the last one did not complete" in asked.stderr
    with BookIndex(settings, book) as index:  # MiniLM's collection; nothing here embeds
        assert index.ingest_state() == "complete"
        assert index.store.count() == len(book_chunks(settings, book)) == 200


class FlakyEmbedder(FakeEmbedder):
    """An embedding service that goes down once: on the call after `outage_after` successful batches."""

    outage_after: int | None = 1

    def embed_documents(self, texts):
        if len(self.document_batches) == self.outage_after:
            self.outage_after = None
            raise EmbeddingError("simulated outage")
        return super().embed_documents(texts)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_an_ingest_that_fails_midway_is_incomplete_until_a_run_finishes_it(tmp_path, settings, kind):
    book = big_book(tmp_path / "big-book", pages=50)  # 100 chunks: two batches
    embedder = FlakyEmbedder()  # fails on the second batch
    collection = collection_name(book, embedder)
    store = EdgeStore(settings.store_dir, collection) if kind == "embedded" else \
        ServerStore(QdrantClient(":memory:"), collection)
    with BookIndex(settings, book, embedder=embedder, store=store) as index:
        with pytest.raises(EmbeddingError):
            index.ingest(progress=False)
        assert index.store.count() == 64 and index.ingest_state() == "incomplete"
        index.ingest(progress=False)
        assert index.ingest_state() == "complete"
        assert index.store.ingest_record()["points"] == 100
        page = book / "00-part" / "000-page.md"  # any change: incomplete from the first write until the last
        page.write_text(page.read_text() + "\nA closing line.\n")
        embedder.outage_after = len(embedder.document_batches)  # fails on the next batch
        with pytest.raises(EmbeddingError):
            index.ingest(progress=False)
        assert index.ingest_state() == "incomplete"


# -- one process at a time ----------------------------------------------------------------------------------


def test_stores_on_one_folder_in_one_process_share_it_and_the_last_close_releases_it(tmp_path):
    """A notebook that loads a program twice opens the same index twice: that is not "another process"."""
    first = EdgeStore(tmp_path, "book__fake16")
    first.create(16)
    second = EdgeStore(tmp_path, "book__fake16")
    assert first.count() == second.count() == 0
    first.close()
    assert second.count() == 0  # still open for the other user
    with open(tmp_path / "book__fake16.lock") as lock:
        with pytest.raises(BlockingIOError):  # what another process would meet
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        second.close()
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once the last user closed


HOLDER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from retrievers.edge_store import EdgeStore
    store = EdgeStore(sys.argv[1], sys.argv[2])
    store.create(384)
    store.count()
    print("holding", flush=True)
    sys.stdin.read()  # hold the store until the test closes our stdin
    store.close()
""")


def test_cli_reports_a_store_held_by_another_process_without_a_traceback(tmp_path, small_book):
    data = tmp_path / "data"
    collection = collection_name(small_book, MiniLMEmbedder)
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(root=str(PROJECT_ROOT)), str(data / "qdrant"), collection],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
    ) as holder:
        watchdog = threading.Timer(60, holder.kill)
        watchdog.start()
        try:
            assert holder.stdout.readline().strip() == "holding", holder.stderr.read()
            result = run_script("ingest.py", small_book, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(data)))
        finally:
            holder.stdin.close()  # the holder closes its store and exits
            holder.wait(timeout=30)
            watchdog.cancel()
    assert holder.returncode == 0
    assert result.returncode == 3, result.stderr
    assert "open in another bookrag process" in result.stderr
    assert f"pid {holder.pid}" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


# -- the command line ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing", "empty", "no-markdown", "file"])
def test_cli_exits_4_naming_an_unusable_book_folder(tmp_path, case):
    folder = tmp_path / f"book-{case}"
    if case == "file":  # `python ingest.py README.md`
        folder.write_text("# Not a folder\n")
    elif case != "missing":
        folder.mkdir()
    if case == "no-markdown":
        (folder / "notes.txt").write_text("not a page")
        (folder / "_category_.json").write_text("{}")
    result = run_script("ingest.py", folder, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")))
    assert result.returncode == 4, result.stderr
    assert str(folder) in result.stderr
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr
    assert ("is not a folder" in result.stderr) is (case == "file")
    assert ("does not exist" in result.stderr) is (case == "missing")


def test_a_book_whose_every_page_is_unreadable_is_a_bad_argument_naming_them(settings, tmp_path):
    from bookrag.errors import BadArgumentError

    book = tmp_path / "binary-book"
    book.mkdir()
    for name in ("a.md", "b.mdx"):
        (book / name).write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(BadArgumentError, match=r"of its 2 .md/.mdx file\(s\), 2 could not be read \(a.md: not UTF-8 "
                                               r"text .*b.mdx: not UTF-8 text"):
        ingest(settings, book)


def test_cli_exits_4_when_no_page_holds_text_naming_the_unreadable_ones(tmp_path):
    """Two empty pages and a binary file named .md: nothing to index is a failure, not an empty success."""
    folder = tmp_path / "book-no-text"
    folder.mkdir()
    (folder / "a.md").write_text("")
    (folder / "b.md").write_text("")
    (folder / "bin.md").write_bytes(bytes(range(256)))
    data = tmp_path / "data"
    result = run_script("ingest.py", folder, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(data)))
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith(f"error: no text to index in {folder}: of its 3 .md/.mdx file(s), 2 hold no "
                                    "text, 1 could not be read (bin.md: not UTF-8 text")
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not list(data.rglob("book-no-text*"))  # no empty collection left behind


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("BOOKRAG_CHUNK_TOKENS", "abc", "BOOKRAG_CHUNK_TOKENS must be a whole number, got 'abc'"),
    ("BOOKRAG_CHUNK_TOKENS", "5", "BOOKRAG_CHUNK_TOKENS must be at least 20"),
    ("BOOKRAG_EMBEDDER", "magic", "BOOKRAG_EMBEDDER must be auto, local or cohere"),
])
def test_cli_exits_2_on_a_bad_environment_variable(tmp_path, small_book, variable, value, message):
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), **{variable: value})
    result = run_script("ingest.py", small_book, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "qdrant").exists()


def test_cli_bad_flag_exits_4(tmp_path, small_book):
    result = run_script("ingest.py", small_book, "--no-such-flag", cwd=tmp_path, env=clean_env())
    assert result.returncode == 4
    assert "--no-such-flag" in result.stderr


def test_read_book_skips_hidden_folders_and_counts_files(settings, tmp_path):
    book = write_book(tmp_path / "b", {**SMALL_BOOK, ".git/notes.md": "# Hidden\n\nNot a page.\n"})
    chunks, errors, n_files = read_book(book, settings)
    assert n_files == 4 and errors == []
    assert Counter(c.source for c in chunks) == {"intro.md": 2, "01-ros2/01-nodes.md": 2,
                                                 "01-ros2/02-launch.md": 1, GAZEBO: 2}


def test_read_book_titles_mdbook_pages_from_summary_and_does_not_index_it(settings, mdbook_src):
    chunks, errors, n_files = read_book(mdbook_src, settings)
    assert errors == [] and n_files == 3  # intro, two chapters: SUMMARY.md and the .rs listing are not pages
    titles = {c.source: c.title for c in chunks}
    assert titles == {"intro.md": "Introduction", "guide/ch01-00-start.md": "Getting Started With the Controller",
                      "guide/ch02-01-setup.md": "Setup"}
    setup = next(c for c in chunks if c.source == "guide/ch02-01-setup.md")
    assert "must run in order before the controller starts:\n\n1. fetch the toolchain" in setup.text
    assert 'open_serial_port("/dev/ttyACM0")' in setup.text


FASTAPI_TUTORIAL = PROJECT_ROOT.parent / "shared" / "corpora" / "fastapi-tutorial"
MKDOCS_SYNTAX = ("{ #", "{#", "{*", "///", "!!!", "--8<--", "{{#", "<font", "<span", "<div", "<abbr", "<dfn")


@pytest.mark.skipif(not FASTAPI_TUTORIAL.is_dir(), reason="the FastAPI tutorial corpus is not in ../shared/corpora")
def test_the_mkdocs_fastapi_tutorial_ingests_without_syntax_in_any_citation_field(settings):
    chunks, errors, n_files = read_book(FASTAPI_TUTORIAL, settings)
    assert errors == [] and n_files == 51
    leaks = [(c.source, field, form) for c in chunks for field in ("text", "title", "heading", "url")
             for form in MKDOCS_SYNTAX if form in getattr(c, field)]
    assert leaks == []
    assert "/docs/path-params#data-validation" in {c.url for c in chunks}


def test_ingesting_a_book_in_a_folder_of_the_same_name_leaves_the_first_books_points(settings, tmp_path):
    x = write_book(tmp_path / "x" / "book", SMALL_BOOK)
    y = write_book(tmp_path / "y" / "book", {"intro.md": "# Other\n\nA different book about sailing boats.\n"})
    _, x_points, _ = ingest(settings, x)
    report, y_points, _ = ingest(settings, y)
    assert report.deleted == 0 and not set(x_points) & set(y_points)
    _, x_points_after, embedder = ingest(settings, x)
    assert x_points_after == x_points and embedder.document_batches == []  # nothing of x was lost


def test_the_ingest_record_names_the_book_and_snapshots_every_file_it_reads(settings, mdbook_src):
    with BookIndex(settings, mdbook_src, embedder=FakeEmbedder()) as index:
        index.ingest(progress=False)
        record = index.store.ingest_record()
    assert record["book"] == str(mdbook_src.resolve())
    # the table of contents and the included listing change the chunks as much as a page does
    assert set(record["files"]) == {"SUMMARY.md", "intro.md", "guide/ch01-00-start.md", "guide/ch02-01-setup.md",
                                    "listings/main.rs"}
    listing = mdbook_src / "listings" / "main.rs"
    size, mtime_ns, sha, ctime_ns = record["files"]["listings/main.rs"]
    now = listing.stat()
    assert (size, mtime_ns, ctime_ns) == (now.st_size, now.st_mtime_ns, now.st_ctime_ns) and len(sha) == 64


@pytest.mark.parametrize("bad_pages", [1, 5])
def test_an_update_names_the_files_skipped_with_errors_a_few_then_how_many_more(settings, tmp_path, bad_pages):
    """ask, evaluate and optimize said `1 file(s) skipped with errors` without naming the file; ingest.py names each."""
    book = write_book(tmp_path / "book", SMALL_BOOK)
    for n in range(1, bad_pages + 1):
        (book / f"bad-{n}.md").write_bytes(b"\xff\xfe not text")
    reason = "not UTF-8 text (byte 0); re-save the file as UTF-8"
    named = [f"skipped bad-{n}.md: {reason}" for n in range(1, min(bad_pages, 3) + 1)]
    rest = ["... and 2 more file(s) skipped with errors: `python ingest.py BOOK_DIR` names them all"]
    said = []
    with BookIndex(settings, book, embedder=FakeEmbedder()) as index:
        index.update(said.append)  # ask: the first run indexes the book
        assert said[1].startswith(f"Indexed: files 4, chunks 7, embedded 7, skipped 0, deleted 0, {bad_pages} "
                                  "file(s) skipped with errors")
        assert said[2:] == named + (rest if bad_pages > 3 else [])
        said.clear()
        index.update(said.append, reread=True)  # evaluate and optimize: the book re-read, unchanged
        listed = ", ".join(f"bad-{n}.md" for n in range(1, min(bad_pages, 3) + 1)) + (", ..." if bad_pages > 3 else "")
        assert said[0] == f"Reading again the {bad_pages} page(s) the last ingest could not read ({listed}) ..."
        assert said[2:] == named + (rest if bad_pages > 3 else [])
