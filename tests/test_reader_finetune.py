"""The finetune optimizer's data and result, without training a real model: what the reader is taught for each kind
of question, that an example is the program's own prompt, and that a compiled program carries its trained adapter
(checked by checksum) and answers with it after a reload."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("torch")  # the adapters below are written as training writes them
pytest.importorskip("gguf")

from conftest import manifest_for
from tiny_qwen2 import lora_with_updates

from bookrag.config import Settings
from bookrag.errors import ArtifactError
from bookrag.questions import Question
from programs.compile.artifact import (
    ADAPTER_FILE,
    MANIFEST_FILE,
    build_manifest,
    file_sha256,
    load_program,
    reader_record,
    write_artifact,
)
from programs.compile.compiler import CompileResult
from programs.compile.finetune import finetune_messages, held_out_split
from programs.compile.optimizers import OptimizerSettings
from programs.compile.reader_targets import plan_target, reader_target
from programs.lm.chat_adapter import BookChatAdapter
from programs.lm.language_model import lm_adapter, make_lm, with_adapter
from programs.lm.reader_adapter import ReaderAdapter
from programs.rag.book_rag import BookRAG
from programs.train.adapter_file import write_adapter
from programs.train.lora_config import LoraConfig

TALL = Question("q1", "How tall is Quillon the teaching robot?", True, ("intro.md",), ("1.4 m",),
                "Quillon is 1.4 m tall.", "factual", style="book-words")


def test_an_example_is_the_chat_the_program_sends_ending_with_the_reply(make):
    program = make()
    target = reader_target(program, plan_target(program, TALL, "tiny", 0), "tiny", None)
    messages = finetune_messages(program, target)
    sent = BookChatAdapter().format(program.generate.predict.signature, [], target.inputs)
    assert messages[:-1] == sent and messages[-1]["role"] == "assistant"
    reply = messages[-1]["content"]
    assert reply.index("[[ ## reasoning ## ]]") < reply.index("[[ ## answer ## ]]") < reply.index("[[ ## answerable")
    assert "Quillon is 1.4 m tall." in reply and reply.endswith("[[ ## answerable ## ]]\nTrue")


def test_a_tenth_of_the_examples_is_held_out_by_seed():
    examples = list(range(100))
    train, held = held_out_split(examples, seed=3)
    assert len(held) == 10 and sorted(train + held) == examples and held_out_split(examples, seed=3)[1] == held
    assert held_out_split(list(range(20)), seed=3)[1] == []


@pytest.fixture
def trained_artifact(small_index, tmp_path):
    """An artifact whose program answers through a (random) adapter trained by its compile."""
    adapter = write_adapter(lora_with_updates(LoraConfig(top_layers=1)), tmp_path / "training" / ADAPTER_FILE)
    settings = Settings(data_dir=tmp_path / "data", book_dir=small_index.book_dir, local_adapter=None)
    trained = ReaderAdapter(adapter, training={"steps": 3})
    program = BookRAG(small_index.retriever, lm=with_adapter(make_lm(settings), trained), answer_mode="extractive")
    manifest = manifest_for(small_index, reader=reader_record(program))
    return write_artifact(program, tmp_path / "artifacts" / "small", manifest), settings


def test_a_compiled_reader_travels_with_its_artifact_and_answers_after_a_reload(small_index, trained_artifact):
    artifact, settings = trained_artifact
    manifest = json.loads((artifact / MANIFEST_FILE).read_text())
    assert manifest["reader"] == {"adapter": ADAPTER_FILE, "sha256": file_sha256(artifact / ADAPTER_FILE),
                                  "training": {"steps": 3}}
    program = load_program(artifact, settings, index=small_index)
    assert lm_adapter(program.lm) == ReaderAdapter(artifact / ADAPTER_FILE)
    assert program.lm.kwargs["metadata"]["gguf"].endswith("+lora:" + file_sha256(artifact / ADAPTER_FILE)[:16])


def test_an_artifact_whose_adapter_was_replaced_is_refused(small_index, trained_artifact):
    artifact, settings = trained_artifact
    (artifact / ADAPTER_FILE).write_bytes(b"another adapter")
    with pytest.raises(ArtifactError, match="not the adapter this program was trained with"):
        load_program(artifact, settings, index=small_index)


def test_the_adapter_keys_the_models_cached_answers(tmp_path):
    """DSPy's cache keys a call by its arguments, the model's identity among them: another adapter, other answers."""
    base = make_lm(Settings(data_dir=tmp_path, local_adapter=None))
    adapter = write_adapter(lora_with_updates(LoraConfig(top_layers=1)), tmp_path / "a.gguf")
    adapted = with_adapter(base, ReaderAdapter(adapter))
    assert base.kwargs["metadata"]["gguf"] != adapted.kwargs["metadata"]["gguf"]
    assert adapted.engine.identity.startswith(base.engine.identity + "+lora:")
    assert with_adapter(adapted, None).kwargs["metadata"] == base.kwargs["metadata"]


def test_the_manifest_names_the_reader_of_the_program_the_compile_kept(small_index, tmp_path):
    """A kept finetune candidate answers through the adapter it trained: the manifest names that one (and the
    artifact carries it), not the reader the zero-shot program answers with."""
    settings = Settings(data_dir=tmp_path / "data", book_dir=small_index.book_dir, local_adapter=None)
    zero_shot = BookRAG(small_index.retriever, lm=make_lm(settings), answer_mode="extractive")
    kept = zero_shot.deepcopy()
    adapter = write_adapter(lora_with_updates(LoraConfig(top_layers=1)), tmp_path / "training" / ADAPTER_FILE)
    kept.lm = with_adapter(zero_shot.lm, ReaderAdapter(adapter, training={"steps": 3}))
    manifest = build_manifest(settings, small_index, CompileResult(kept), OptimizerSettings("finetune"),
                              {}, time.time())
    assert manifest["reader"] == {"adapter": ADAPTER_FILE, "sha256": file_sha256(adapter), "training": {"steps": 3}}
