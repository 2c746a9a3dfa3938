"""Shared fixtures: a fast deterministic fake embedder, small books written into tmp_path, CLI runners, the tiny
book of the BookRAG tests (tiny_book.py), a fake hosted LM and a fake Cohere server.

Only tests/test_minilm.py (in-process) and the evaluate CLI test (in a subprocess) load the real MiniLM model;
everything else embeds with `FakeEmbedder`, a hashed bag of words.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # so `python -m pytest` and plain `pytest` both find the packages
    sys.path.insert(0, str(PROJECT_ROOT))

from fake_cohere import CohereServer, FakeCohere
from fake_openai import FakeOpenAI, serving
from question_files import EVALUATE_QUESTIONS
from tiny_book import BOOK, HashedEmbedder, pin_gate

from bookrag.config import Settings
from programs.cli import evaluate
from retrievers.book_index import BookIndex

_WORD = re.compile(r"\w+")


# The embedded engine fsyncs on every flush/close (~0.1 s each on a disk, ~1 ms in RAM). Unless --basetemp was
# given, keep tmp_path in a private folder in /dev/shm: the store tests then run ~2.5x faster.
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    shm = Path("/dev/shm")
    if config.option.basetemp is None and shm.is_dir() and os.access(shm, os.W_OK):
        config.option.basetemp = tempfile.mkdtemp(prefix="bookrag-tests-", dir=shm)
        config._bookrag_shm_basetemp = config.option.basetemp


def pytest_unconfigure(config):
    folder = getattr(config, "_bookrag_shm_basetemp", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
    close_llama_cpp_sinks()


def close_llama_cpp_sinks() -> None:
    """llama-cpp-python opens /dev/null twice when it is imported (llama_cpp/_utils.py: where it sends a loading
    model's output) and never closes it: at exit, Python reports each as an unclosed file (ResourceWarning). The
    session closes them once every test has run, when no model loads any more."""
    sinks = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        sink = getattr(sinks, name, None)
        if sink is not None:
            sink.close()


def fake_vector(text: str, dim: int = 16) -> list[float]:
    """A normalized hashed bag of words: texts sharing words point the same way; stable across processes."""
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        digest = hashlib.md5(word.encode("utf-8")).digest()
        sign = 1.0 if digest[1] & 1 else -1.0
        vec[digest[0] % dim] += sign
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # no words at all: any fixed unit vector
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


class FakeEmbedder:
    """Implements the `Embedder` protocol without a model; records what it was asked to embed.

    `delay` (seconds per `embed_documents` call) and `announce` (print a line per call, flushed) exist for
    the kill-mid-ingest test, which runs this class in a subprocess.
    """

    name = "fake16"
    model_id = "tests/fake-hashed-bag-of-words-16"
    dim = 16

    def __init__(self, delay: float = 0.0, announce: bool = False):
        self.delay, self.announce = delay, announce
        self.document_batches: list[list[str]] = []
        self.queries: list[str] = []

    @property
    def documents_embedded(self) -> int:
        return sum(len(batch) for batch in self.document_batches)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_batches.append(list(texts))
        if self.announce:
            print(f"embedding batch {len(self.document_batches)} ({len(texts)} texts)", flush=True)
        if self.delay:
            time.sleep(self.delay)
        return [fake_vector(t, self.dim) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return fake_vector(text, self.dim)


def write_book(root: Path, files: dict[str, str]) -> Path:
    """Write `{relative path: text}` under `root` (text is dedented) and return `root`."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


# A small book: two modules and a root page, each page on its own distinct topic and vocabulary.
SMALL_BOOK = {
    "intro.md": """
        ---
        title: Welcome
        ---

        # Welcome

        This primer teaches robotics from the ground up. Every chapter uses the same teaching robot.

        ## Who should read it

        Readers comfortable with a Linux shell and basic Python will feel at home here.
        """,
    "01-ros2/01-nodes.md": """
        ---
        title: Nodes and Topics
        ---

        # Nodes and Topics

        A node is a process that performs computation. Nodes talk to each other over topics.

        ## Quality of service

        The zephyrine reliability profile keeps messages when the network drops packets.
        """,
    "01-ros2/02-launch.md": """
        ---
        title: Launch Files
        ---

        # Launch Files

        Launch files start many nodes at once with their parameters.
        """,
    "02-sim/01-gazebo.md": """
        ---
        title: Gazebo Physics
        ---

        # Gazebo Physics

        Gazebo simulates rigid body physics, gravity, friction and contact between links.

        ## Sensors

        Simulated cameras and lidar sensors publish noisy measurements like real hardware.
        """,
}


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir)


@pytest.fixture
def small_book(tmp_path: Path) -> Path:
    return write_book(tmp_path / "small-book", SMALL_BOOK)


@pytest.fixture
def small_index(settings, small_book, fake_embedder):
    """The small book ingested into an embedded store under tmp_path, with the fake embedder."""
    index = BookIndex(settings, small_book, embedder=fake_embedder)
    index.ingest(progress=False)
    yield index
    index.close()


def manifest_for(index, **changes) -> dict:
    manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": index.embedder.name,
                "collection": index.collection, "book": str(index.book_dir),
                "index_fingerprint": index.fingerprint(), "answer_mode": "extractive"}  # as the tests' programs answer
    return {**manifest, **changes}


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without any bookrag/Cohere/Qdrant configuration, plus `extra`.

    CLI tests pin the command-line contract (arguments, exit codes, files), not the model: they answer
    extractively, in milliseconds, unless `extra` says otherwise (the slow tests run the real local model)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKRAG_", "COHERE_", "QDRANT_"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", BOOKRAG_ANSWER_MODE="extractive")
    env.update(extra)
    return env


def killed_between_renames(folder: Path, data_dir: Path) -> None:
    """Leave `folder` as a folder swap recorded in `data_dir` and killed between its two renames does: moved aside,
    its successor staged."""
    from bookrag.atomic_file import FolderSwap

    swap = FolderSwap.begin(folder, data_dir)
    folder.rename(swap.old)


def killed_once_it_prints(script: str, line: str) -> None:
    """Run the Python `script` in a fresh interpreter and kill it once it prints `line`: a run killed there."""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == line
        child.kill()
    finally:
        child.wait(timeout=30)


def run_script(script: str, *args: str, cwd: Path, env: dict[str, str], timeout: float = 60):
    """Run one of the project's CLI scripts (ingest.py, evaluate.py) in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, str(PROJECT_ROOT / script), *map(str, args)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """evaluate.py in process (`run_evaluate`): a book, a question file and a data folder in tmp_path; the fake
    embedder wherever a BookIndex is opened."""
    for name in [k for k in os.environ if k.startswith(("BOOKRAG_", "COHERE_", "QDRANT_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("BOOKRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BOOKRAG_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    # The reports are under test, not the model: no 1.1 GB model assembled and run in every test's data folder.
    monkeypatch.setenv("BOOKRAG_ANSWER_MODE", "extractive")
    monkeypatch.chdir(tmp_path)  # no project .env
    monkeypatch.setattr("retrievers.book_index.make_embedder", lambda settings: FakeEmbedder())
    book = write_book(tmp_path / "tiny-book", SMALL_BOOK)
    questions = tmp_path / "questions.csv"
    questions.write_text(EVALUATE_QUESTIONS, encoding="utf-8")
    return {"book": book, "questions": questions, "out": tmp_path / "report", "root": tmp_path}


def run_evaluate(ws, *args: str) -> int:
    return evaluate.main(["--book", str(ws["book"]), "--questions", str(ws["questions"]), "--out", str(ws["out"]),
                          *args])


# An mdBook `src/` folder: a table of contents, chapters whose first heading is an H2, hard-wrapped prose, and a
# code listing inside the book that a chapter includes by anchor.
MDBOOK_SRC = {
    "SUMMARY.md": """
        # Summary

        [Introduction](intro.md)

        # User guide

        - [Getting started](guide/ch01-00-start.md)
            - [Setup](guide/ch02-01-setup.md)
            - [Draft chapter]()
        - [The `Config` type](guide/config%20type.md)
        """,
    "intro.md": """
        This primer has no H1 on its introduction page. Its prose is wrapped at a
        narrow column, as mdBook sources
        often are.
        """,
    "guide/ch01-00-start.md": """
        # Getting Started With the Controller

        The controller boots in three phases.
        """,
    "guide/ch02-01-setup.md": """
        ## Installing the toolchain

        The three steps below must run in order before
        the controller starts:

        1. fetch the toolchain
        2. build the firmware

        ```rust
        {{#include ../listings/main.rs:setup}}
        ```
        """,
    "listings/main.rs": """
        fn main() {
            // ANCHOR: setup
            let port = open_serial_port("/dev/ttyACM0");
            // ANCHOR_END: setup
        }
        """,
}


@pytest.fixture
def mdbook_src(tmp_path: Path) -> Path:
    return write_book(tmp_path / "mdbook" / "src", MDBOOK_SRC)


# -- the tiny book of the BookRAG tests (tiny_book.py) -------------------------------------------------------

@pytest.fixture
def index(tmp_path: Path):
    book = tmp_path / "book"
    for rel, text in BOOK.items():
        (book / rel).parent.mkdir(parents=True, exist_ok=True)
        (book / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", book_dir=book)
    index = BookIndex(settings, book, embedder=HashedEmbedder())
    index.ingest(progress=False)
    yield index
    index.close()


@pytest.fixture
def make(index):
    """`make(lm=..., answer_mode=..., k=...)` -> a BookRAG over the tiny book, gate pinned open."""
    from programs.rag.book_rag import BookRAG  # DSPy: a second, paid by the tests that use it

    def build(lm=None, answer_mode="generated", k=3, probability=0.99):
        program = BookRAG(index.retriever, lm=lm, top_k=k, answer_mode=answer_mode)
        pin_gate(program.gate, probability)
        return program

    return build


@pytest.fixture
def hosted_lm(tmp_path, monkeypatch):
    """`hosted_lm(reply)`: make_lm's hosted model on a fake OpenAI server that streams `reply` 4 characters at a
    time when asked to stream; no response cache, so every call reaches the server."""
    import dspy
    from dspy.clients.cache import Cache

    from programs.lm.language_model import make_lm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with ExitStack() as servers:

        def build(reply: str):
            server = servers.enter_context(serving(FakeOpenAI(reply)))
            lm = make_lm(Settings(data_dir=tmp_path, lm="openai/fake-model", lm_api_base=server.api_base,
                                  lm_retries=0))
            monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))
            return lm, server

        yield build


# -- the fake Cohere API (fake_cohere.py) ---------------------------------------------------------------------

@pytest.fixture
def cohere_server():
    server = CohereServer(FakeCohere())
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
