"""Compiled-program artifacts: atomic writes that survive a kill, and clear errors for mismatched or bad ones."""

from __future__ import annotations

import json
import logging
import re
import textwrap

import pytest
from conftest import PROJECT_ROOT, FakeEmbedder, killed_between_renames, killed_once_it_prints, manifest_for
from dspy.utils import DummyLM
from fake_cohere import FakeCohereRerank, cohere_reranker

from bookrag.atomic_file import FolderSwap, folder_to_read
from bookrag.errors import ArtifactError
from programs.compile.artifact import (
    MANIFEST_FILE,
    PROGRAM_FILE,
    default_artifact,
    load_program,
    read_manifest,
    write_artifact,
)
from programs.rag.book_rag import BookRAG
from retrievers.book_index import BookIndex


@pytest.fixture
def artifact(small_index, tmp_path):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    program.gate.threshold = 0.42  # something to recognise after a reload
    return write_artifact(program, tmp_path / "artifacts" / "small", manifest_for(small_index),
                          small_index.settings.data_dir)


def test_a_written_artifact_loads_with_its_state(small_index, artifact):
    program = load_program(artifact, small_index.settings, index=small_index)
    assert program.gate.threshold == 0.42
    assert program.manifest["collection"] == small_index.collection


def test_a_write_killed_mid_save_leaves_the_previous_artifact_intact(small_index, artifact):
    before = {name: (artifact / name).read_bytes() for name in (PROGRAM_FILE, MANIFEST_FILE)}
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(PROJECT_ROOT)!r})
        from pathlib import Path
        from programs.compile.artifact import write_artifact

        class SlowProgram:
            def save(self, path):
                Path(path).write_text('{{"generate": ')  # half a file, then hang until killed
                print("writing", flush=True)
                time.sleep(60)

        write_artifact(SlowProgram(), Path({str(artifact)!r}), {{"lm": "new"}},
                       Path({str(small_index.settings.data_dir)!r}))
    """)
    killed_once_it_prints(script, "writing")
    assert {name: (artifact / name).read_bytes() for name in before} == before
    assert read_manifest(artifact)["lm"] == "local"


def test_a_write_killed_between_its_renames_is_read_where_it_lies_and_put_back_by_the_next_write(
        small_index, artifact):
    """The one window where the folder is absent: the old copy is moved aside and the new one not yet in. A reader
    reads it there and moves nothing; the next write puts it back before its own swap."""
    data_dir = small_index.settings.data_dir
    killed_between_renames(artifact, data_dir)
    left = sorted(artifact.parent.iterdir())
    aside = folder_to_read(artifact, data_dir)
    assert aside.name.startswith(".small.old-") and read_manifest(aside)["lm"] == "local"
    assert sorted(artifact.parent.iterdir()) == left
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    write_artifact(program, artifact, manifest_for(small_index, lm="openai/gpt-4o-mini"), data_dir)
    assert read_manifest(artifact)["lm"] == "openai/gpt-4o-mini"
    assert [p.name for p in artifact.parent.iterdir()] == [artifact.name]
    assert list((data_dir / "swaps").iterdir()) == []  # the records of both swaps went with them


def test_rewriting_replaces_the_artifact_and_leaves_no_staging_folders(small_index, artifact):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    write_artifact(program, artifact, manifest_for(small_index, lm="openai/gpt-4o-mini"))
    assert read_manifest(artifact)["lm"] == "openai/gpt-4o-mini"
    assert [p.name for p in artifact.parent.iterdir()] == [artifact.name]


def test_the_default_artifact_is_read_where_a_kill_between_the_renames_left_it(small_index, artifact):
    """ask.py and evaluate.py look for artifacts/<book>/: it must be found, not silently passed over."""
    default = artifact.with_name(small_index.book_dir.name)  # artifacts/<book>/, compiled for this book
    artifact.rename(default)
    killed_between_renames(default, small_index.settings.data_dir)
    settings = small_index.settings.replace(artifacts_dir=artifact.parent)
    found = default_artifact(settings, small_index.book_dir)
    assert found.name.startswith(f".{default.name}.old-") and not default.exists()
    assert read_manifest(found)["collection"] == small_index.collection


@pytest.mark.parametrize("left", [[PROGRAM_FILE], []], ids=["program-only", "empty"])
def test_a_default_artifact_folder_without_its_manifest_is_an_error_not_passed_over(small_index, artifact, left):
    """ask.py and evaluate.py would otherwise run the uncompiled program without a word, even with --verbose."""
    (artifact / MANIFEST_FILE).unlink()
    for name in {PROGRAM_FILE} - set(left):
        (artifact / name).unlink()
    settings = small_index.settings.replace(artifacts_dir=artifact.parent)
    with pytest.raises(ArtifactError, match=f"{artifact / MANIFEST_FILE} is missing: .*recompile with `python "
                                            f"optimize.py`, or remove {artifact} to run the uncompiled program"):
        default_artifact(settings, small_index.book_dir.with_name(artifact.name))
    assert default_artifact(settings, small_index.book_dir.with_name("never-compiled")) is None


def test_the_next_write_cleans_what_killed_writes_left_behind(small_index, artifact):
    """A kill between the renames leaves `.old-*` (and no artifact); a kill mid-save leaves `.writing-*`."""
    data_dir = small_index.settings.data_dir
    killed_between_renames(artifact, data_dir)
    half_written = FolderSwap.begin(artifact, data_dir).staging
    (half_written / PROGRAM_FILE).write_text('{"generate": ')
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    write_artifact(program, artifact, manifest_for(small_index, lm="openai/gpt-4o-mini"), data_dir)
    assert [p.name for p in artifact.parent.iterdir()] == [artifact.name]
    assert read_manifest(artifact)["lm"] == "openai/gpt-4o-mini"


def test_a_missing_artifact_says_how_to_make_one(tmp_path):
    with pytest.raises(ArtifactError, match="optimize.py"):
        read_manifest(tmp_path / "nothing-here")


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"lm": "local"}), "lacks"),
    (json.dumps(["a", "list"]), "lacks"),
])
def test_a_hand_edited_manifest_is_rejected(artifact, text, message):
    (artifact / MANIFEST_FILE).write_text(text)
    with pytest.raises(ArtifactError, match=message):
        read_manifest(artifact)


def test_a_hand_edited_gate_threshold_out_of_range_is_refused(small_index, artifact):
    program = json.loads((artifact / PROGRAM_FILE).read_text())
    program["gate"]["threshold"] = -1.0  # would answer every question
    (artifact / PROGRAM_FILE).write_text(json.dumps(program))
    with pytest.raises(ArtifactError, match=r"hand-edited.*threshold must lie in \[0, 1\], got -1.0"):
        load_program(artifact, small_index.settings, index=small_index)


def with_demos(artifact, count: int) -> None:
    program = json.loads((artifact / PROGRAM_FILE).read_text())
    program["generate.predict"]["demos"] = [{"question": f"q{n}?", "context": "[1] x", "answer": "a"}
                                            for n in range(count)]
    (artifact / PROGRAM_FILE).write_text(json.dumps(program))


def test_a_program_holding_more_demos_than_the_bound_is_refused_naming_the_predictor(small_index, artifact):
    """20,000 demos in a hand-edited program.json once made every hosted question a 22.5 MB request."""
    with_demos(artifact, 20_000)
    with pytest.raises(ArtifactError) as caught:
        load_program(artifact, small_index.settings, index=small_index)
    assert caught.value.exit_code == 2
    assert str(caught.value) == (f"{artifact / PROGRAM_FILE}: generate.predict.demos holds 20000 demos; at most 32 "
                                 "are sent with each question: recompile with `python optimize.py`")


def test_a_program_at_the_demo_bound_loads(small_index, artifact):
    with_demos(artifact, 32)
    assert len(load_program(artifact, small_index.settings, index=small_index).generate.predict.demos) == 32


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_write_artifact_never_moves_a_file_or_a_folder_it_did_not_write(small_index, tmp_path, kind):
    from bookrag.errors import BadArgumentError

    target = tmp_path / "mine"
    if kind == "file":
        target.write_text("my notes")
    else:
        target.mkdir()
        (target / "notes.txt").write_text("my notes")
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    with pytest.raises(BadArgumentError, match=f"--out {re.escape(str(target))} (is a file|holds files that are not a bookrag compiled program)"):
        write_artifact(program, target, manifest_for(small_index))
    assert (target if kind == "file" else target / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_empty_folder_becomes_the_artifact(small_index, tmp_path):
    (tmp_path / "empty").mkdir()
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    write_artifact(program, tmp_path / "empty", manifest_for(small_index))
    assert read_manifest(tmp_path / "empty")["collection"] == small_index.collection
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no .old-* nor .writing-* left


@pytest.mark.parametrize("text", ['{"generate": ', '{"gate": {"weights": "x"}}', "gASVAAAAAAAAAAA="])
def test_a_corrupt_program_file_is_an_artifact_error_not_a_crash(small_index, artifact, text):
    (artifact / PROGRAM_FILE).write_text(text)
    with pytest.raises(ArtifactError, match="corrupt, hand-edited"):
        load_program(artifact, small_index.settings, index=small_index)


def test_a_different_embedder_says_to_match_it_or_recompile(small_index, artifact):
    manifest = json.loads((artifact / MANIFEST_FILE).read_text())
    (artifact / MANIFEST_FILE).write_text(json.dumps({**manifest, "embedder": "cohere-embed-english-v3.0"}))
    with pytest.raises(ArtifactError, match="BOOKRAG_EMBEDDER"):
        load_program(artifact, small_index.settings, index=small_index)


def test_a_different_lm_says_to_switch_or_recompile(small_index, artifact):
    settings = small_index.settings.replace(lm="openai/gpt-4o-mini")
    with pytest.raises(ArtifactError, match="BOOKRAG_LM=local"):
        load_program(artifact, settings, index=small_index)


def test_a_missing_collection_says_to_ingest(settings, small_book, fake_embedder, artifact, tmp_path):
    empty = BookIndex(settings.replace(data_dir=tmp_path / "elsewhere"), small_book, embedder=fake_embedder)
    try:
        with pytest.raises(ArtifactError, match="ingest.py"):
            load_program(artifact, empty.settings, index=empty)
    finally:
        empty.close()


def test_another_books_collection_is_refused(small_index, artifact):
    manifest = json.loads((artifact / MANIFEST_FILE).read_text())
    (artifact / MANIFEST_FILE).write_text(json.dumps({**manifest, "collection": "other-book__fake16"}))
    with pytest.raises(ArtifactError, match="recompile"):
        load_program(artifact, small_index.settings, index=small_index)


class NamedLikeMiniLM(FakeEmbedder):
    """Fills the collection load_program opens by itself (`<book>__minilm384`), without loading MiniLM."""

    name, dim = "minilm384", 384


def test_load_program_twice_in_one_process_shares_the_open_index(settings, small_book, tmp_path):
    """A notebook re-runs its cells: the second load must not find its own process holding the index."""
    with BookIndex(settings, small_book, embedder=NamedLikeMiniLM()) as index:
        index.ingest(progress=False)
        manifest = manifest_for(index)
        artifact = write_artifact(BookRAG(index.retriever, answer_mode="extractive"), tmp_path / "art", manifest)
    first = load_program(artifact, settings, lm=DummyLM([]))
    second = load_program(artifact, settings, lm=DummyLM([]))
    assert second.index.store.count() == first.index.store.count() > 0
    first.index.close()
    (hit,) = second.index.retriever.search("zephyrine reliability", k=1, mode="sparse")  # no embedding needed
    assert hit.source == "01-ros2/01-nodes.md"
    second.index.close()


# -- query expansion: what the program was compiled with ------------------------------------------------------


@pytest.fixture
def parts_artifact(small_index, tmp_path):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive", expand="parts")
    return write_artifact(program, tmp_path / "artifacts" / "parts", manifest_for(small_index, expand="parts"))


def test_a_program_compiled_with_expansion_loads_with_it_when_none_is_configured(small_index, parts_artifact):
    assert load_program(parts_artifact, small_index.settings, index=small_index).expand == "parts"


def test_the_configured_expansion_reaches_a_loaded_program_that_was_compiled_with_it(small_index, parts_artifact):
    settings = small_index.settings.replace(expand="parts")
    assert load_program(parts_artifact, settings, index=small_index).expand == "parts"


def test_a_configured_expansion_other_than_the_compiled_one_is_refused_with_the_fix(small_index, parts_artifact):
    with pytest.raises(ArtifactError, match="compiled with query expansion 'parts' but BOOKRAG_EXPAND=none"):
        load_program(parts_artifact, small_index.settings.replace(expand="none"), index=small_index)


def test_the_configured_expansion_reaches_a_zero_shot_program(small_index):
    settings = small_index.settings.replace(expand="parts", answer_mode="extractive")
    assert BookRAG.from_settings(settings, small_index, lm=DummyLM([])).expand == "parts"
    assert BookRAG.from_settings(small_index.settings, small_index, lm=DummyLM([])).expand == "none"


# -- the reranker: a gate fitted on rerank scores is bound to the one it was compiled with ---------------------

COMPILED_RERANKER = {"kind": "cohere", "model": "rerank-v3.5"}


def reranked_artifact(index, folder, weighs: bool = True, **manifest):
    """An artifact compiled with Cohere's rerank-v3.5 whose gate weighs rerank scores (as one fitted on reranked
    examples) or ignores them (as the shipped default)."""
    program = BookRAG(index.retriever, lm=None, answer_mode="extractive")
    if weighs:
        program.gate.weights["top_rerank"] = 2.0
    return write_artifact(program, folder, manifest_for(index, **{"reranker": COMPILED_RERANKER, **manifest}))


def test_a_gate_fitted_on_rerank_scores_runs_with_the_reranker_it_was_compiled_with(small_index, tmp_path):
    fake = FakeCohereRerank()
    small_index.retriever.reranker = cohere_reranker(fake)
    settings = small_index.settings.replace(answer_mode="extractive")  # the passages, not the local model's answer
    program = load_program(reranked_artifact(small_index, tmp_path / "art"), settings, index=small_index)
    assert program.gate.weighs_rerank_scores
    passages = program(question="What is a node?").passages
    assert passages and all(p.rerank_score is not None for p in passages)
    assert {body["model"] for body in fake.reranks} == {"rerank-v3.5"}


@pytest.mark.parametrize("model, configured", [(None, "no reranker"),
                                               ("rerank-english-v2.0", "the cohere reranker rerank-english-v2.0")],
                         ids=["none", "another-model"])
def test_a_gate_fitted_on_rerank_scores_is_refused_without_its_reranker_naming_both_and_the_fix(
        small_index, tmp_path, model, configured):
    """Another model's scores were read silently as the gate's evidence; without a reranker every question met a
    configuration error (ask.py's exit 2 at its first question, a failed row each in evaluate.py)."""
    fake = FakeCohereRerank()
    small_index.retriever.reranker = model and cohere_reranker(fake, model=model)
    artifact = reranked_artifact(small_index, tmp_path / "art")
    with pytest.raises(ArtifactError) as caught:
        load_program(artifact, small_index.settings, index=small_index)
    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        f"{artifact} has a refusal gate fitted on the rerank scores of the cohere reranker rerank-v3.5, but "
        f"{configured} is configured: set COHERE_API_KEY and COHERE_RERANK_MODEL=rerank-v3.5 (with "
        "BOOKRAG_RERANKER auto or cohere) to rerank as compiled, or recompile with `python optimize.py` to fit a "
        "gate on this configuration")
    assert fake.requests == []


def test_a_manifest_from_before_the_reranker_was_recorded_needs_a_reranker_for_a_gate_that_weighs_it(
        small_index, tmp_path):
    artifact = reranked_artifact(small_index, tmp_path / "art")
    manifest = json.loads((artifact / MANIFEST_FILE).read_text())
    del manifest["reranker"]
    (artifact / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=r"rerank scores of the cohere reranker \(its model was not recorded\), "
                                            r"but no reranker is configured: set COHERE_API_KEY \(with"):
        load_program(artifact, small_index.settings, index=small_index)
    small_index.retriever.reranker = cohere_reranker(FakeCohereRerank(), model="rerank-english-v3.0")
    assert load_program(artifact, small_index.settings, index=small_index).gate.weighs_rerank_scores


def test_a_program_compiled_with_a_reranker_whose_gate_ignores_it_runs_without_it_and_says_so(
        small_index, tmp_path, caplog):
    """The README said it exits 2; it ran, without a word. Its gate reads no rerank score, so it runs (README)."""
    artifact = reranked_artifact(small_index, tmp_path / "art", weighs=False)
    with caplog.at_level(logging.WARNING, logger="programs.compile.artifact"):
        program = load_program(artifact, small_index.settings, index=small_index)
    assert not program.gate.weighs_rerank_scores and program(question="What is a node?").answer
    assert (f"{artifact} was compiled with the cohere reranker rerank-v3.5, but no reranker is configured: it runs, "
            "as its refusal gate ignores rerank scores") in caplog.text
