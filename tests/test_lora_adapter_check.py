"""A LoRA adapter llama.cpp cannot apply is a configuration error naming the file and what is wrong (exit 2), found
before llama.cpp sees it: llama.cpp crashed the process on it (exit 139, no message). And the adapter's checksum is
read in chunks, only when a call needs it.

The GGUF files are written with the `gguf` package's writer (the training's), not with the reader under test: a
tiny qwen2 "model" of two layers, width 8, and adapters for it or for something else; crafted headers, byte by byte.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import dspy
import numpy as np
import pytest
from conftest import SMALL_BOOK, clean_env, run_script, write_book
from dspy.lm15 import Message, Request, Response, Usage

from bookrag.config import Settings
from bookrag.errors import ConfigError
from programs.compile.artifact import bind_reader
from programs.lm.gguf_header import STRING, Skipped, read_gguf_header
from programs.lm.language_model import LocalLM, lm_errors, make_lm
from programs.lm.llama_cpp_engine import adapter_checksum
from programs.lm.lora_adapter_check import BadAdapter, check_lora_adapter
from programs.lm.response_cache import ResponseCache

ROOT = Path(__file__).resolve().parents[1]
RANK = 2
Q, K = "blk.1.attn_q.weight", "blk.1.attn_k.weight"


def write_gguf(path: Path, tensors: dict[str, np.ndarray], architecture: str = "qwen2", **metadata) -> Path:
    """A GGUF of `tensors` (numpy's order: a weight is [out, in]) and metadata (key: value, or (add_ method, value)),
    written by the gguf package."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), architecture)
    for key, value in metadata.items():
        method, value = value if isinstance(value, tuple) else ("add_string", value)
        getattr(writer, method)(key.replace("__", "."), value)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def matrix(*shape: int) -> np.ndarray:
    return np.full(shape, 0.01, dtype=np.float16)


@pytest.fixture
def model(tmp_path) -> Path:
    """Two layers of width 8 (attn_k: 8 in, 4 out), a vocabulary of 32."""
    tensors = {"token_embd.weight": matrix(32, 8)}
    for layer in range(2):
        tensors |= {f"blk.{layer}.attn_q.weight": matrix(8, 8), f"blk.{layer}.attn_k.weight": matrix(4, 8)}
    return write_gguf(tmp_path / "model.gguf", tensors, general__type="model", qwen2__block_count=("add_uint32", 2))


def adapter(path: Path, pairs: dict[str, tuple[np.ndarray, np.ndarray]], architecture: str = "qwen2",
            **metadata) -> Path:
    """A LoRA adapter GGUF of (lora_a, lora_b) by model tensor, as programs/train writes one, unless `metadata`
    says otherwise (None: no such key)."""
    tensors = {}
    for name, (a, b) in pairs.items():
        tensors |= {f"{name}.lora_a": a, f"{name}.lora_b": b}
    metadata = {"general__type": "adapter", "adapter__type": "lora", "adapter__lora__alpha": ("add_float32", 4.0),
                **metadata}
    return write_gguf(path, tensors, architecture, **{key: value for key, value in metadata.items() if value is not None})


def fitting(name: str = Q, out: int = 8) -> dict:
    """lora_a [rank, in] and lora_b [out, rank], in numpy's order, for a model tensor of width 8."""
    return {name: (matrix(RANK, 8), matrix(out, RANK))}


def test_adapters_that_fit_the_model_pass(model, tmp_path):
    check_lora_adapter(adapter(tmp_path / "q.gguf", fitting(Q) | fitting(K, out=4)), model)
    # The token embedding's pair is stored the other way round: lora_a [vocab, rank], lora_b [hidden, rank].
    check_lora_adapter(adapter(tmp_path / "embd.gguf", {"token_embd.weight": (matrix(32, RANK), matrix(8, RANK))}),
                       model)
    norm = {"blk.1.attn_norm.weight": np.ones(8, np.float32)}  # llama.cpp skips a norm's tensor
    check_lora_adapter(write_gguf(tmp_path / "norm.gguf", {f"{Q}.lora_a": matrix(RANK, 8),
                                                           f"{Q}.lora_b": matrix(8, RANK)} | norm,
                                  general__type="adapter", adapter__type="lora"), model)


BAD_FILES = {
    "empty": (lambda path, model: written(path, b""), "is empty"),
    "random bytes": (lambda path, model: written(path, os.urandom(4096)),
                     r"is not a GGUF file \(it does not start with GGUF\)"),
    "GGUF version 1": (lambda path, model: written(path, b"GGUF" + struct.pack("<IQQ", 1, 0, 0)),
                       "is GGUF version 1; llama.cpp reads versions 2 and 3"),
    "a tensor name over 63 bytes": (lambda path, model: adapter(path, fitting("blk.1." + "x" * 60)),
                                    "has a tensor name over 63 bytes long, which llama.cpp refuses"),
    "the model itself": (lambda path, model: model, r"is a model, not a LoRA adapter \(general.type=model\)"),
    "another adapter type": (lambda path, model: adapter(path, fitting(), adapter__type="control_vector"),
                             r"is not a LoRA adapter \(adapter.type=control_vector, not lora\)"),
    "no general.type": (lambda path, model: adapter(path, fitting(), general__type=None),
                        "has no general.type: it is not a LoRA adapter GGUF"),
    "general.type a number": (lambda path, model: adapter(path, fitting(), general__type=("add_uint32", 1)),
                              "has general.type of GGUF type 4, not a string"),
    "alpha a float64": (lambda path, model: adapter(path, fitting(), adapter__lora__alpha=("add_float64", 4.0)),
                        "has adapter.lora.alpha of GGUF type 12, not float32"),
    "alpha NaN": (lambda path, model: adapter(path, fitting(), adapter__lora__alpha=("add_float32", float("nan"))),
                  "has adapter.lora.alpha nan: it must be a finite number"),
    "another architecture": (lambda path, model: adapter(path, fitting(), architecture="llama"),
                             "is for llama models, and the model is qwen2"),
    "more layers": (lambda path, model: adapter(path, fitting("blk.2.attn_q.weight")),
                    "adapts blk.2, but the model has 2 layers"),
    "a tensor the model lacks": (lambda path, model: adapter(path, fitting("blk.1.attn_v.weight")),
                                 "adapts blk.1.attn_v.weight, which the model does not have"),
    "another width in": (lambda path, model: adapter(path, {Q: (matrix(RANK, 16), matrix(8, RANK))}),
                         (r"holds blk.1.attn_q.weight.lora_a of shape \[16, 2\], but the model's "
                          r"blk.1.attn_q.weight of shape \[8, 8\] needs \[8, 2\]")),
    "another width out": (lambda path, model: adapter(path, fitting(K, out=8)),
                          (r"holds blk.1.attn_k.weight.lora_b of shape \[2, 8\], but the model's "
                           r"blk.1.attn_k.weight of shape \[8, 4\] needs \[2, 4\]")),
    "two ranks": (lambda path, model: adapter(path, {Q: (matrix(RANK, 8), matrix(8, RANK + 1))}),
                  r"lora_b of shape \[3, 8\].* needs \[2, 8\]"),
    "a lora_a alone": (lambda path, model: write_gguf(path, {f"{Q}.lora_a": matrix(RANK, 8)}, general__type="adapter",
                                                      adapter__type="lora"),
                       "has blk.1.attn_q.weight.lora_a without its .lora_b matrix"),
    "a tensor of the model": (lambda path, model: write_gguf(path, {Q: matrix(8, 8)}, general__type="adapter",
                                                             adapter__type="lora"),
                              "holds the tensor blk.1.attn_q.weight, which is neither a .lora_a nor a .lora_b"),
    "no matrices": (lambda path, model: adapter(path, {}), r"holds no LoRA matrices"),
    "integer matrices": (lambda path, model: write_gguf(path, {f"{Q}.lora_a": np.zeros((RANK, 8), np.int8)},
                                                           general__type="adapter", adapter__type="lora"),
                            "of ggml type 24; an adapter's tensors are F32, F16, BF16, Q8_0"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_file_llama_cpp_cannot_apply_is_a_configuration_error_naming_it_and_the_fault(case, model, tmp_path):
    make, fault = BAD_FILES[case]
    path = make(tmp_path / "adapter.gguf", model)
    with pytest.raises(BadAdapter, match=fault) as caught:
        check_lora_adapter(path, model)
    assert caught.value.exit_code == 2
    assert f"the LoRA adapter {path} " in str(caught.value) and "BOOKRAG_LOCAL_ADAPTER" in str(caught.value)


@pytest.mark.parametrize("kept, fault", [
    (-1, r"is \d+ bytes, but its blk.1.attn_q.weight.lora_b ends at byte \d+ \(a truncated file\?\)"),
    (100, r"ends before .* does \(truncated, or not a GGUF file\)"),
])
def test_a_truncated_adapter_says_so(model, tmp_path, kept, fault):
    """Cut in its last tensor's data (llama.cpp read past the end and crashed), or in its header."""
    data = adapter(tmp_path / "whole.gguf", fitting()).read_bytes()
    (cut := tmp_path / "cut.gguf").write_bytes(data[:kept])
    with pytest.raises(BadAdapter, match=fault):
        check_lora_adapter(cut, model)


# -- a crafted header: refused after bounded work -------------------------------------------------------------------


def raw_gguf(tensors: int, entries: int, *body: bytes) -> bytes:
    """A GGUF v3 header declaring `tensors` tensors and `entries` metadata entries, then `body`, nothing else."""
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, entries) + b"".join(body)


def gguf_string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def string_array(key: bytes, count: int, items: bytes = b"") -> bytes:
    """The metadata entry `key`: an array declaring `count` strings, then `items`."""
    return gguf_string(key) + struct.pack("<IIQ", 9, 8, count) + items


TINY_ENTRIES = b"".join(gguf_string(b"k%d" % i) + struct.pack("<IB", 0, 1) for i in range(1000))
EMPTY = struct.pack("<Q", 0)  # an empty string
# Each file ends long before what it declares: a reader that followed the count would say it ends too soon.
CRAFTED = {
    "a billion metadata entries": (lambda: raw_gguf(0, 10**9, TINY_ENTRIES),
                                   "declares 1,000,000,000 metadata entries; no model or adapter has over 4,096"),
    "a billion tensors": (lambda: raw_gguf(10**9, 0, TINY_ENTRIES),
                          "declares 1,000,000,000 tensors; no model or adapter has over 16,384"),
    "a key of a terabyte": (lambda: raw_gguf(0, 1, struct.pack("<Q", 1 << 40), b"k" * 1000),
                            "has a metadata key 1,099,511,627,776 bytes long; GGUF's keys are at most 65,535"),
    "an array of a billion strings": (lambda: raw_gguf(0, 1, string_array(b"tokenizer.ggml.tokens", 10**9,
                                                                          EMPTY * 1000)),
                                      "has over 4,194,304 strings in its metadata arrays"),
    "arrays of 4 million strings together": (
        lambda: raw_gguf(0, 2, string_array(b"a", 1 << 21, EMPTY * (1 << 21)), string_array(b"b", (1 << 21) + 1, EMPTY)),
        r"has over 4,194,304 strings in its metadata arrays \(the array b has 2,097,153\)"),
}


@pytest.mark.parametrize("case", CRAFTED)
def test_a_header_declaring_more_than_any_model_has_is_refused_by_its_bound_not_its_end(case, model, tmp_path):
    """A 64 MB file of tiny metadata entries took 16-40 s and 0.49 GB to read whole before it was judged."""
    make, fault = CRAFTED[case]
    path = written(tmp_path / "adapter.gguf", make())
    with pytest.raises(BadAdapter, match=f"the LoRA adapter {path} {fault}") as caught:
        check_lora_adapter(path, model)
    assert caught.value.exit_code == 2 and "ends before" not in str(caught.value)


def test_a_header_over_64_mib_is_refused_where_it_passes_the_bound(model, tmp_path):
    """A string of 100 MiB in the metadata, in a file that holds it (sparse): the header is refused by its size."""
    path = written(tmp_path / "adapter.gguf", raw_gguf(0, 1, gguf_string(b"general.name"),
                                                        struct.pack("<IQ", 8, 100 << 20)))
    with open(path, "r+b") as file:
        file.truncate(200 << 20)
    with pytest.raises(BadAdapter, match=r"has a header over 64 MiB \(at the value of general.name\)"):
        check_lora_adapter(path, model)


def test_a_header_the_size_of_the_packaged_models_is_read(tmp_path):
    """Its tokenizer's 152k tokens and 151k merges, and 339 tensors: well within every bound."""
    tensors = b"".join(gguf_string(b"blk.%d.ffn_up.weight" % i) + struct.pack("<IqqIQ", 2, 1536, 8960, 12, 0)
                       for i in range(339))
    tokens = b"".join(gguf_string(b"token%d" % i) for i in range(151_000))
    merges = b"".join(gguf_string(b"t%d oken%d" % (i, i)) for i in range(151_000))
    path = written(tmp_path / "model.gguf", raw_gguf(339, 3, gguf_string(b"general.architecture"),
                                                     struct.pack("<I", 8), gguf_string(b"qwen2"),
                                                     string_array(b"tokenizer.ggml.tokens", 151_000, tokens),
                                                     string_array(b"tokenizer.ggml.merges", 151_000, merges),
                                                     tensors))
    header = read_gguf_header(path)
    assert header.string("general.architecture") == "qwen2" and len(header.tensors) == 339
    assert header.metadata["tokenizer.ggml.merges"] == Skipped(STRING, 151_000)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_the_local_model_checks_its_adapter_before_llama_cpp_loads_it(model, tmp_path):
    """Through the program's LM, as a generated answer calls it: exit 2 naming the adapter, not a crash (an empty
    adapter killed the process with exit 139)."""
    (empty := tmp_path / "empty.gguf").write_bytes(b"")
    lm = make_lm(Settings(data_dir=tmp_path, local_model=model, local_adapter=empty))
    with pytest.raises(ConfigError, match=f"the LoRA adapter {empty} is empty") as caught, \
            dspy.context(lm=lm), lm_errors():
        lm("Hi")
    assert caught.value.exit_code == 2


# -- the checksum ---------------------------------------------------------------------------------------------------


SIZE = 64 << 20


@pytest.fixture
def big_adapter(tmp_path) -> Path:
    """A LoRA adapter of 64 MB: a small one followed by zeros, which llama.cpp never reads."""
    path = adapter(tmp_path / "big.gguf", fitting())
    with open(path, "r+b") as file:
        file.truncate(SIZE)  # sparse: no disk
    return path


def peak_memory(work) -> int:
    """The most memory Python held at once while `work()` ran, in bytes."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_adapter_checksum_reads_the_file_in_chunks(big_adapter):
    """A 64 MB file is hashed with a small buffer: the base model named as the adapter took 1.2 GB, an 8 GB file
    under a 3 GB memory limit was exit 70."""
    expected = hashlib.sha256()
    with open(big_adapter, "rb") as file:
        while chunk := file.read(1 << 20):
            expected.update(chunk)
    assert peak_memory(lambda: adapter_checksum(big_adapter)) < 4 << 20
    assert adapter_checksum(big_adapter) == expected.hexdigest()[:16]


def test_a_file_that_is_no_adapter_is_refused_before_it_is_hashed(tmp_path):
    """A generated answer's first call hashes the adapter for the cache key: 8 GB of something else took 44 s on 2
    cores before the check that refused it."""
    with open(zeros := tmp_path / "zeros.gguf", "wb") as file:
        file.truncate(SIZE)
    with pytest.raises(BadAdapter, match=f"the LoRA adapter {zeros} is not a GGUF file"):
        adapter_checksum(zeros)


def test_loading_a_compiled_program_hashes_the_configured_adapter_in_chunks(big_adapter, tmp_path):
    """A program compiled without a reader compares the configured adapter with the one it was compiled with."""
    program = SimpleNamespace(lm=make_lm(Settings(data_dir=tmp_path, local_adapter=big_adapter)))
    assert peak_memory(lambda: bind_reader(program, None, tmp_path)) < 4 << 20


class FakeEngine:
    """An lm15 engine that answers "Paris" and counts its calls, and how often its identity was read."""

    def __init__(self):
        self.calls, self.reads, self.weights = 0, 0, "model+lora:aaaa"

    @property
    def identity(self) -> str:
        self.reads += 1
        return self.weights

    def complete(self, request: Request) -> Response:
        self.calls += 1
        return Response(id="r", model=request.model, message=Message.assistant("Paris"), finish_reason="stop",
                        usage=Usage(input_tokens=1, output_tokens=1))


def test_the_local_lm_reads_the_weights_identity_at_each_call_not_when_made(monkeypatch):
    """Made, the LM reads nothing (the adapter's checksum is the whole file); each call keys its cached answer by
    the weights as they are then: an adapter retrained in place, in the same process, gets answers of its own."""
    monkeypatch.setattr(dspy, "cache", ResponseCache(enable_disk_cache=False, enable_memory_cache=True,
                                                     disk_cache_dir=None))
    engine = FakeEngine()
    lm = LocalLM("local/fake", engine=engine, num_retries=0, temperature=0.0)
    assert engine.reads == 0
    lm("Hi")
    lm("Hi")
    assert engine.calls == 1  # the second answer came from the cache
    engine.weights = "model+lora:bbbb"
    lm("Hi")
    assert engine.calls == 2


# Runs ask.py in this interpreter and reports on stderr how often the adapter file was opened.
_COUNT_OPENS = """
import atexit, runpy, sys
adapter, opened = sys.argv[1], []
sys.addaudithook(lambda event, args: opened.append(1) if event == "open" and str(args[0]) == adapter else None)
atexit.register(lambda: print(f"adapter opened {len(opened)} times", file=sys.stderr))
sys.argv = ["ask.py", *sys.argv[2:]]
runpy.run_path("ask.py", run_name="__main__")
"""


def test_an_extractive_answer_never_reads_the_adapter(tmp_path):
    """ask.py in extractive mode never calls the model, so it never hashes (or opens) its adapter; the probe's 8 GB
    file was read whole for nothing."""
    book = write_book(tmp_path / "book", SMALL_BOOK)
    with open(big := tmp_path / "huge-adapter.gguf", "wb") as file:
        file.truncate(1 << 30)  # sparse
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_BOOK=str(book),
                    BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"), BOOKRAG_LOCAL_ADAPTER=str(big))
    result = subprocess.run([sys.executable, "-c", _COUNT_OPENS, str(big), "What does a node do?", "--json"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "adapter opened 0 times" in result.stderr


@pytest.mark.slow
def test_ask_with_a_bad_adapter_exits_2_naming_it_instead_of_crashing(tmp_path):
    """The issue's case as a user meets it: a generated answer with BOOKRAG_LOCAL_ADAPTER naming random bytes, on
    the packaged model (exit 139, a segmentation fault, before)."""
    from programs.lm.packaged_model import QWEN_CODER_1_5B

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    packaged = QWEN_CODER_1_5B.path(ROOT / "data" / "models")  # assembled once, shared with the other slow tests
    (models / packaged.name).symlink_to(packaged)
    (bad := tmp_path / "reader.gguf").write_bytes(os.urandom(1 << 16))
    book = write_book(tmp_path / "book", SMALL_BOOK)
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_BOOK=str(book), BOOKRAG_ANSWER_MODE="generated",
                    BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"), BOOKRAG_LOCAL_ADAPTER=str(bad))
    result = run_script("ask.py", "What does a node do?", "--json", cwd=tmp_path, env=env, timeout=600)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert f"the LoRA adapter {bad} is not a GGUF file" in " ".join(result.stderr.split())
