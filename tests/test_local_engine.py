"""The in-process local model: its messages, the packaged GGUF's assembly, and real calls through dspy.LM."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import time
import uuid

import dspy
import pytest
from dspy.clients.cache import Cache
from dspy.lm15 import Config, Message, Request

from bookrag.config import Settings
from bookrag.errors import ConfigError
from programs.lm import llama_cpp_engine
from programs.lm.language_model import lm_errors, make_lm
from programs.lm.llama_cpp_engine import chat_messages
from programs.lm.packaged_model import QWEN_CODER_1_5B, PackagedModel

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python is not installed (it has no wheel here and compiles from source: `make setup`)",
)


def test_messages_keep_the_system_text_first_and_the_turns_in_order():
    request = Request(
        model="local/test",
        system="Answer briefly.",
        messages=(Message.user("Hi"), Message.assistant("Hello"), Message.user("Name a color.")),
    )
    assert chat_messages(request) == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Name a color."},
    ]


# -- the packaged model: parts on the package registry, one checked file on disk ----------------------------------


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three tiny installed packages `fake_model_partN/data/partNN.bin`, like the registry's model parts."""
    chunks = [b"GGUF" + bytes(range(60)), b"middle" * 50, b"end"]
    for n, chunk in enumerate(chunks, start=1):
        package = tmp_path / "site" / f"fake_model_part{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(chunks)
    return PackagedModel(name="fake", file_name="fake.gguf", package="fake_model_part{n}", parts=3, size=len(whole),
                         sha256=hashlib.sha256(whole).hexdigest())


def test_the_parts_assemble_in_order_into_a_file_with_the_declared_checksum(parts, tmp_path):
    path = parts.path(tmp_path / "models")
    assert path == tmp_path / "models" / "fake.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == parts.sha256
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["fake.gguf"]  # no partial file left behind


def test_an_assembled_file_is_reused_not_rebuilt(parts, tmp_path):
    path = parts.path(tmp_path / "models")
    stamp = path.stat().st_mtime_ns
    assert parts.path(tmp_path / "models").stat().st_mtime_ns == stamp


def test_a_checksum_mismatch_leaves_no_model_file(parts, tmp_path):
    corrupt = PackagedModel(**{**parts.__dict__, "sha256": "0" * 64})
    with pytest.raises(ConfigError, match="reinstall"):
        corrupt.path(tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []  # neither the model nor a partial file


def test_a_missing_part_is_a_config_error_naming_it_and_writes_nothing(parts, tmp_path):
    sys.modules.pop("fake_model_part2", None)
    (tmp_path / "site" / "fake_model_part2" / "__init__.py").unlink()
    (tmp_path / "site" / "fake_model_part2" / "data" / "part02.bin").unlink()
    (tmp_path / "site" / "fake_model_part2").rename(tmp_path / "site" / "moved")
    with pytest.raises(ConfigError, match="fake_model_part2"):
        parts.path(tmp_path / "models")
    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_the_local_model_name_comes_from_the_gguf(tmp_path):
    assert make_lm(Settings(data_dir=tmp_path)).model == f"local/{QWEN_CODER_1_5B.name}"
    own = make_lm(Settings(data_dir=tmp_path, local_model=tmp_path / "my-model.Q4.gguf"))
    assert own.model == "local/my-model.Q4"  # nothing loads until the first call


def call(lm) -> None:
    with dspy.context(lm=lm), lm_errors():
        lm("Hi")


@pytest.mark.parametrize("gguf, message", [
    pytest.param("missing.gguf", "missing.gguf is not a file: point it at a .gguf model", marks=needs_llama),
    pytest.param("notes.gguf", r"cannot load .*notes.gguf with llama.cpp .*is it a GGUF model\?", marks=needs_llama),
])
def test_a_local_model_that_is_not_a_gguf_file_is_a_configuration_error_not_a_run_time_one(tmp_path, gguf, message):
    """Exit 2 (ConfigError), as the README's contract has it, not 3 (AgentError)."""
    (tmp_path / "notes.gguf").write_text("not a model")
    lm = make_lm(Settings(data_dir=tmp_path, local_model=tmp_path / gguf))
    with pytest.raises(ConfigError, match=message) as caught:
        call(lm)
    assert caught.value.exit_code == 2


@needs_llama
def test_a_packaged_model_part_that_is_not_installed_is_a_configuration_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, QWEN_CODER_1_5B.package.format(n=1), None)  # `import` of it fails
    monkeypatch.setattr(llama_cpp_engine, "_MODELS", {})  # an earlier test's loaded packaged model would be shared
    with pytest.raises(ConfigError, match="is not installed: run `pip install -e .`"):
        call(make_lm(Settings(data_dir=tmp_path)))  # data/models is empty: the GGUF would be assembled


# -- the real model (slow: assembles 1.1 GB once into data/models, loads it, generates) ---------------------------


@pytest.fixture(scope="module")
def local_lm():
    lm = make_lm(Settings(lm="local", lm_max_tokens=16))  # the project's data dir: assembled once, reused
    yield lm
    lm.engine.close()


@pytest.mark.slow
@needs_llama
def test_the_packaged_model_answers_within_the_cap_and_reports_usage(local_lm, monkeypatch, record_property):
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))  # measure the model, not a cache
    start = time.perf_counter()
    [text] = local_lm(messages=[{"role": "system", "content": "Reply with one word."},
                                {"role": "user", "content": "Name a primary color."}])
    record_property("seconds_with_model_load", round(time.perf_counter() - start, 2))
    usage = local_lm.history[-1]["usage"]
    assert any(color in text.lower() for color in ("red", "blue", "yellow"))
    assert 0 < usage["completion_tokens"] <= 16
    assert usage["prompt_tokens"] > 0


@pytest.mark.slow
@needs_llama
def test_a_shared_prompt_prefix_is_read_once_then_reused_from_the_kv_cache(local_lm, monkeypatch):
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))
    system = {"role": "system", "content": "You answer questions about a robotics textbook. " * 20}
    local_lm(messages=[system, {"role": "user", "content": "Say yes."}], max_tokens=2)
    local_lm(messages=[system, {"role": "user", "content": "Say no."}], max_tokens=2)
    first, second = (h["usage"] for h in local_lm.history[-2:])
    reused = second["prompt_tokens_details"]["cached_tokens"]
    # The second prompt differs only after the system message (~170 tokens, under the prefix store's minimum, so
    # this is llama.cpp's own KV cache): it re-reads just the new tail.
    assert reused >= 150
    assert second["prompt_tokens"] - reused < 20
    assert first["prompt_tokens_details"]["cached_tokens"] < reused


@pytest.mark.slow
@needs_llama
def test_a_second_engine_sharing_the_loaded_model_also_saves_its_prompt_prefix(local_lm, monkeypatch, tmp_path):
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))
    local_lm(messages=[{"role": "user", "content": "Say yes."}], max_tokens=2)  # the first engine loads the model
    # The same weights in another data folder: it shares that loaded model, and keeps its prefixes in its own folder.
    second = make_lm(Settings(lm="local", lm_max_tokens=2, data_dir=tmp_path / "data"))
    # A prefix no earlier run can have stored (tmp_path's name repeats from one pytest session to the next).
    system = {"role": "system", "content": f"{uuid.uuid4().hex}: you answer questions about a robotics textbook. " * 40}
    started = time.time()
    second(messages=[system, {"role": "user", "content": "Say no."}])
    saved = sorted(second.engine.models_dir.glob("prompt-prefixes/*.kv"), key=lambda p: p.stat().st_mtime)
    assert saved and saved[-1].stat().st_mtime >= started - 1  # a new prefix (unique to this test), saved


_FIRST_CALL = """
import json, sys
from pathlib import Path
import dspy
from dspy.clients.cache import Cache
from bookrag.config import Settings
from programs.lm.language_model import lm_errors, make_lm
lm = make_lm(Settings(data_dir=Path(sys.argv[1]), lm_max_tokens=2))
dspy.cache = Cache(False, False, None)
system = {"role": "system", "content": "You answer questions about a robotics textbook. " * 40}
lm(messages=[system, {"role": "user", "content": sys.argv[2]}])
print(json.dumps(lm.history[-1]["usage"]))
"""


@pytest.mark.slow
@needs_llama
def test_a_new_process_loads_the_prompt_prefix_from_disk_instead_of_reading_it_again(tmp_path):
    import json
    import subprocess

    from bookrag.config import PROJECT_ROOT

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    packaged = QWEN_CODER_1_5B.path(PROJECT_ROOT / "data" / "models")  # assembled once for the whole suite
    (models / packaged.name).symlink_to(packaged)

    def first_call(question: str) -> dict:
        done = subprocess.run([sys.executable, "-c", _FIRST_CALL, str(tmp_path / "data"), question],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold = first_call("Say yes.")
    saved = list((models / "prompt-prefixes").glob("*.kv"))
    assert len(saved) == 1 and cold["prompt_tokens_details"]["cached_tokens"] >= 300  # ~330 read once, then reused
    warm = first_call("Say no.")  # a new process: the system message comes from disk, not from the model
    assert warm["prompt_tokens_details"]["cached_tokens"] >= 300
    assert warm["prompt_tokens"] - warm["prompt_tokens_details"]["cached_tokens"] < 20


@pytest.mark.slow
@needs_llama
def test_a_streamed_reply_is_the_whole_reply_in_pieces_with_its_usage(local_lm):
    request = Request(model=local_lm.model, system="Reply in a few words.",
                      messages=(Message.user("Name three primary colors."),), config=Config(max_tokens=16))
    whole = local_lm.engine.complete(request)
    events = list(local_lm.engine.stream(request))
    pieces = [event.delta.text for event in events if event.type == "delta"]
    assert [events[0].type, events[-1].type] == ["start", "end"]
    assert len(pieces) > 1 and "".join(pieces) == whole.message.parts[0].text
    assert events[-1].usage.output_tokens == whole.usage.output_tokens
    assert events[-1].usage.input_tokens == whole.usage.input_tokens


@pytest.mark.slow
@needs_llama
def test_the_local_model_stops_at_chatadapters_end_marker(local_lm, monkeypatch):
    """Nothing after `[[ ## completed` is read, so the model is not left to write it (or anything after it)."""
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))
    [text] = local_lm(messages=[{"role": "user", "content": "Copy this text exactly, nothing else:\n"
                                 "[[ ## answer ## ]]\nYes\n\n[[ ## completed ## ]]\nAnd then this line."}],
                      max_tokens=40)
    assert "Yes" in text and "completed" not in text and "then this line" not in text


@pytest.mark.slow
@needs_llama
def test_a_trained_adapter_file_is_applied_by_llama_cpp(local_lm, tmp_path, capfd):
    """An adapter written by programs/train for the packaged model's shape loads, quietly, and changes what the model
    computes."""
    import llama_cpp
    import numpy as np

    from programs.train.adapter_file import write_adapter
    from programs.train.lora import LoraWeights
    from programs.train.lora_config import LoraConfig
    from programs.train.model_shape import model_shape

    path = local_lm.engine.model_path()
    lora = LoraWeights(LoraConfig(rank=4, alpha=8.0, top_layers=1), model_shape(path))
    for b in lora.b.values():
        b.data.normal_(0, 0.05)
    adapter = write_adapter(lora, tmp_path / "adapter.gguf")
    adapted = make_lm(Settings(lm="local", lm_max_tokens=16, local_adapter=adapter))
    assert adapted.engine.identity != local_lm.engine.identity
    tokens = local_lm.engine._load().llama.tokenize(b"The capital of France is", add_bos=False)
    scores = []
    for llama in (local_lm.engine._load().llama, adapted.engine._load().llama):
        llama.reset()
        llama.eval(tokens)  # the last token's logits, which llama.cpp keeps without logits_all
        scores.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits(llama.ctx), shape=(llama.n_vocab(),)).copy())
    adapted.engine.close()
    assert np.abs(scores[0] - scores[1]).max() > 0.1
    assert "lora" not in capfd.readouterr().err  # llama.cpp's warning per adapted matrix stays off the terminal
