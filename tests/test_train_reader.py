"""train_reader.py as a user runs it: what it refuses before any work, and the files it never touches.

Each case fails before the first question is asked, so no model or index is loaded; the training itself is tested
on a tiny model in test_reader_training.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import SMALL_BOOK, clean_env, run_script, write_book

from bookrag.config import Settings
from bookrag.errors import BadArgumentError
from bookrag.output_folder import OutputFolder
from programs.cli.train_reader import READER_OUTPUT, TRAINING_BOOKS, write_reader
from programs.train.model_shape import UnsupportedModel, model_shape

pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")


def train_reader(tmp_path, *args, **env):
    return run_script("train_reader.py", *args, cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), **env))


def test_an_out_folder_of_the_users_files_is_refused_and_kept(tmp_path):
    mine = tmp_path / "thesis"
    (mine / "sub").mkdir(parents=True)
    (mine / "chapter1.tex").write_text("my only copy")
    (mine / "sub" / "notes.md").write_text("mine too")
    done = train_reader(tmp_path, "--out", mine)
    assert done.returncode == 4, done.stderr
    assert "thesis" in done.stderr and "not a bookrag trained reader" in done.stderr
    assert (mine / "chapter1.tex").read_text() == "my only copy"
    assert (mine / "sub" / "notes.md").read_text() == "mine too"
    assert not (tmp_path / "data" / "training").exists()


@pytest.mark.parametrize("flag", ["--epochs", "--rank", "--top-layers"])
def test_a_setting_below_one_is_a_usage_error(tmp_path, flag):
    done = train_reader(tmp_path, flag, "0", "--out", tmp_path / "reader")
    assert done.returncode == 4 and flag in done.stderr
    assert not (tmp_path / "reader").exists()


def gguf_model(path, architecture: str, tensors=("token_embd.weight",), **keys):
    """A GGUF of `architecture`, its metadata `keys` (under the architecture: (add_ method, value)), `tensors` of
    zeros."""
    writer = gguf.GGUFWriter(str(path), architecture)
    for key, (method, value) in keys.items():
        getattr(writer, method)(f"{architecture}.{key}", value)
    for name in tensors:
        writer.add_tensor(name, np.zeros((40, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def llama_gguf(path):
    """A GGUF of another architecture, of a shape a qwen2 one has (under llama.)."""
    return gguf_model(path, "llama", block_count=("add_uint32", 2))


def text_file(path):
    path.write_text("not a model\n")
    return path


@pytest.mark.parametrize("script", [["train_reader.py"], ["optimize.py", "--optimizer", "finetune", "--answer-mode",
                                                          "generated", "--lm", "local"]],
                         ids=lambda script: script[0])
@pytest.mark.parametrize("make, what", [(llama_gguf, "is a GGUF of architecture llama"),
                                        (text_file, r"is not a GGUF file \(it does not start with GGUF\)")],
                         ids=["llama", "text"])
def test_a_model_that_is_no_qwen2_gguf_is_a_configuration_error_before_any_work(tmp_path, script, make, what):
    """It ended in a ValueError, StopIteration or IndexError from the gguf package's reader (exit 70)."""
    model = make(tmp_path / "model.gguf")
    done = run_script(*script, "--out", tmp_path / "out", cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_LOCAL_MODEL=str(model),
                                    BOOKRAG_BOOK=str(write_book(tmp_path / "book", SMALL_BOOK))))
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(f"error: BOOKRAG_LOCAL_MODEL {model} {what}: training a reader needs a qwen2 GGUF \\(the "
                        r"packaged Qwen2.5-Coder is one\): unset BOOKRAG_LOCAL_MODEL to train the packaged model\n",
                        done.stderr), done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "data" / "training").exists()


@pytest.mark.parametrize("tensors, keys, fault", [
    ((), {}, "has no token_embd.weight of two dimensions"),  # a LoRA adapter's general.architecture is qwen2 too
    (("token_embd.weight",), {"block_count": ("add_uint32", 2)}, "has no qwen2.embedding_length in its metadata"),
    (("token_embd.weight",), {"block_count": ("add_string", "two")},
     "has qwen2.block_count 'two', not a whole number above 0"),
    (("token_embd.weight",), {"block_count": ("add_bool", True)},
     "has qwen2.block_count True, not a whole number above 0"),
])
def test_a_qwen2_gguf_without_the_models_shape_names_what_it_lacks(tmp_path, tensors, keys, fault):
    """A missing token embedding was a StopIteration (exit 70)."""
    model = gguf_model(tmp_path / "model.gguf", "qwen2", tensors, **keys)
    with pytest.raises(UnsupportedModel) as caught:
        model_shape(model)
    assert str(caught.value).startswith(f"BOOKRAG_LOCAL_MODEL {model} {fault}")
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("book", [book for book, _, _ in TRAINING_BOOKS], ids=lambda book: book.name)
def test_an_out_folder_inside_a_book_it_trains_on_is_refused_before_any_work(tmp_path, book):
    done = train_reader(tmp_path, "--out", book / "reader")
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"error: --out {book / 'reader'} is inside the book ({book}): what bookrag writes there "
                           "would be read as part of the book on the next run; name a folder outside it\n")
    assert not (book / "reader").exists() and not (tmp_path / "data" / "training").exists()


def test_a_file_put_in_out_during_the_training_is_kept_and_the_trained_adapter_too(tmp_path):
    """--out was claimed hours before the swap: it is checked again, as write_artifact does."""
    out = tmp_path / "reader"
    adapter = tmp_path / "data" / "training" / "reader" / "adapter.gguf"
    adapter.parent.mkdir(parents=True)
    adapter.write_bytes(b"GGUF first")
    write_reader(adapter, {"adapter": "adapter.gguf", "sha256": "1" * 64, "training": {}}, out)
    settings = Settings(book_dir=write_book(tmp_path / "book", SMALL_BOOK), data_dir=tmp_path / "data")
    assert OutputFolder(out, READER_OUTPUT).claim(settings) == out  # the previous reader may be replaced
    (out / "notes.txt").write_text("mine, written while it trained")
    adapter.write_bytes(b"GGUF second")
    with pytest.raises(BadArgumentError) as caught:
        write_reader(adapter, {"adapter": "adapter.gguf", "sha256": "2" * 64, "training": {}}, out)
    assert str(caught.value) == (f"--out {out} holds files bookrag did not write (notes.txt) beside its trained "
                                 "reader, and a new one replaces the whole folder: move them out, or name another "
                                 f"folder; the trained adapter is kept at {adapter}")
    assert (out / "notes.txt").read_text() == "mine, written while it trained"
    assert (out / "adapter.gguf").read_bytes() == b"GGUF first" and adapter.read_bytes() == b"GGUF second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book", "data", "reader"]  # nothing staged left
