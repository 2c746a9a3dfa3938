"""train_reader.py as a user runs it: what it refuses before any work, and the files it never touches.

Each case fails before the first question is asked, so no model or index is loaded; the training itself is tested
on a tiny model in test_reader_training.py.
"""

from __future__ import annotations

import pytest
from conftest import clean_env, run_script

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


def test_a_model_of_another_architecture_is_refused_before_any_work(tmp_path):
    model = tmp_path / "llama.gguf"
    writer = gguf.GGUFWriter(str(model), "llama")
    writer.add_block_count(2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    done = train_reader(tmp_path, "--out", tmp_path / "reader", BOOKRAG_LOCAL_MODEL=str(model))
    assert done.returncode == 2, done.stderr
    assert "llama" in done.stderr and "qwen2" in done.stderr
    assert not (tmp_path / "reader").exists()
