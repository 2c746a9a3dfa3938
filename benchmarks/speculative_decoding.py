"""Speculative decoding on this CPU: what checking a draft costs, and prompt-lookup decoding against plain greedy.

    python benchmarks/speculative_decoding.py [--n 12] [--draft 8] [--ngrams 3,2,1]

Why the local model does not use it. A draft (from the prompt, or from a small draft model) pays only when the model
checks k drafted tokens in one batch for less than the k single-token steps it saves. A CPU's decode is usually
bound by reading the weights, so a batch of a few tokens costs about as much as one; on this 2-core VM it is bound
by arithmetic, and the benchmark prints how much each batch size costs.

Then it asks `--n` answerable dev questions of the bundled book with the zero-shot program (DSPy's cache off) and
records each prompt the model was sent. For each prompt, the KV cache is cut back to the prompts' shared prefix
and the prompt is answered twice: by `Llama.create_completion` (greedy, as the engine runs it) and by the
prompt-lookup decoder below, which drafts the tokens that followed the latest earlier occurrence of the last
n-gram of prompt + text, and asks llama.cpp for logits only at the draft's positions. (llama-cpp-python's own
`draft_model` route instead turns on `logits_all` for the whole context: a 2.5 GB logits array at n_ctx 4096 with
Qwen's 151,936-token vocabulary, and logits for every prompt token.) Prints both times, the drafted tokens the model
accepted, and how many texts are identical. Run it alone: two model-heavy jobs on 2 cores slow each other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.cli import load_settings
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS
from bookrag.questions import load_questions


def lookup_draft(sequence: list[int], size: int, ngrams: tuple[int, ...]) -> list[int]:
    """The tokens that followed the latest earlier occurrence of the sequence's last n-gram (longest n first)."""
    array = np.asarray(sequence)
    for n in ngrams:
        if len(sequence) <= n:
            continue
        windows = np.lib.stride_tricks.sliding_window_view(array[:-1], n)
        starts = np.flatnonzero(np.all(windows == array[-n:], axis=1))
        if starts.size:
            start = int(starts[-1]) + n
            return array[start:start + size].tolist()
    return []


def decode_with_logits(llama, batch: list[int]) -> np.ndarray:
    """Evaluate `batch` after the KV cache's tokens, with logits at every position: one row per token."""
    import llama_cpp

    n_past = llama.n_tokens
    llama._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past:n_past + len(batch)] = batch
    llama.n_tokens = n_past + len(batch)
    logits = llama_cpp.llama_get_logits(llama._ctx.ctx)
    return np.ctypeslib.as_array(logits, shape=(len(batch) * llama.n_vocab(),)).reshape(len(batch), -1)


def keep_tokens(llama, keep: int) -> None:
    """Cut the KV cache (and llama-cpp-python's record of it) back to its first `keep` tokens."""
    llama._ctx.kv_cache_seq_rm(-1, keep, -1)
    llama.n_tokens = keep


def lookup_greedy(llama, prompt: list[int], max_tokens: int, stop: list[str], draft: int,
                  ngrams: tuple[int, ...]) -> tuple[str, int]:
    """Greedy text of `prompt` with prompt-lookup drafts; returns the text and the drafted tokens accepted."""
    import llama_cpp

    llama.eval(prompt[llama.n_tokens:])
    next_token = int(np.argmax(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1),
                                                     shape=(llama.n_vocab(),))))
    written, accepted_total = [], 0

    def done() -> bool:
        text = llama.detokenize(written).decode("utf-8", errors="ignore")
        return (llama_cpp.llama_vocab_is_eog(llama._model.vocab, written[-1]) or len(written) >= max_tokens
                or any(s in text for s in stop))

    while True:
        written.append(next_token)
        if done():
            break
        guess = lookup_draft(prompt + written, draft, ngrams)[: max_tokens - len(written)]
        rows = decode_with_logits(llama, [next_token, *guess])
        accepted = 0
        for token, row in zip(guess, rows):
            if int(np.argmax(row)) != token:
                break
            written.append(token)
            accepted += 1
            if done():
                break
        accepted_total += accepted
        keep_tokens(llama, llama.n_tokens - len(guess) + accepted)
        if done():
            break
        next_token = int(np.argmax(rows[accepted]))
    llama._requires_eval = True  # the context's logits are not its last token's
    if llama_cpp.llama_vocab_is_eog(llama._model.vocab, written[-1]):
        written = written[:-1]
    text = llama.detokenize(written).decode("utf-8", errors="ignore")
    cuts = [text.index(s) for s in stop if s in text]
    return (text[: min(cuts)] if cuts else text), accepted_total


def record_prompts(n: int) -> list[tuple[list[int], dict]]:
    """The local model's prompts for the first `n` answerable dev questions of the bundled book, zero-shot."""
    import llama_cpp

    from programs.compile.artifact import open_program

    os.environ["BOOKRAG_DSPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="bookrag-no-cache-")
    recorded, original = [], llama_cpp.Llama.create_completion

    def recording(self, prompt, **kwargs):
        recorded.append((list(prompt), kwargs))
        return original(self, prompt, **kwargs)

    llama_cpp.Llama.create_completion = recording
    questions = [q for q in load_questions(BUNDLED_QUESTIONS) if q.split == "dev" and q.answerable and not q.history]
    settings = load_settings(book_dir=BUNDLED_BOOK)
    program = open_program(settings, book_dir=BUNDLED_BOOK, zero_shot=True, announce=lambda message: None)
    for question in questions[:n]:
        program.ask(question.question)
    llama_cpp.Llama.create_completion = original
    program.index.close()
    return recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=12, help="dev questions whose prompts are compared")
    parser.add_argument("--draft", type=int, default=8, help="most tokens drafted per batch")
    parser.add_argument("--ngrams", default="3,2,1", help="n-gram sizes looked up, longest first")
    args = parser.parse_args()
    ngrams = tuple(int(n) for n in args.ngrams.split(","))
    from llama_cpp import Llama

    from programs.lm.packaged_model import QWEN_CODER_1_5B

    records = record_prompts(args.n)
    settings = load_settings(book_dir=BUNDLED_BOOK)
    llama = Llama(str(QWEN_CODER_1_5B.path(settings.data_dir / "models")), n_ctx=4096, n_threads=settings.lm_threads,
                  verbose=False)
    prompts = [tokens for tokens, _ in records]
    shared = min(llama.longest_token_prefix(prompts[0], p) for p in prompts[1:])
    llama.eval(prompts[0][:shared])
    print(f"llama.cpp: {llama_system_info()}; {settings.lm_threads} threads; load average {os.getloadavg()[0]:.1f}")
    print("cost of checking a batch (5 runs each, after the shared prompt prefix):")
    single = None
    for size in (1, 2, 3, 4, 6, 8, 12, 16):
        times = []
        for _ in range(5):
            started = time.perf_counter()
            decode_with_logits(llama, prompts[0][shared:shared + size])
            times.append(time.perf_counter() - started)
            keep_tokens(llama, shared)
        median = statistics.median(times)
        single = single or median
        print(f"  batch of {size:2d} tokens: {median * 1000:6.1f} ms = {median / single:4.2f} single steps")

    rows = []
    for tokens, kwargs in records:
        keep_tokens(llama, shared)
        started = time.perf_counter()
        plain = llama.create_completion(tokens, max_tokens=kwargs["max_tokens"], temperature=0.0, top_p=1.0,
                                        stop=kwargs["stop"])
        plain_s = time.perf_counter() - started
        keep_tokens(llama, shared)
        started = time.perf_counter()
        text, accepted = lookup_greedy(llama, tokens, kwargs["max_tokens"], kwargs["stop"], args.draft, ngrams)
        lookup_s = time.perf_counter() - started
        written = plain["usage"]["completion_tokens"]
        rows.append((plain_s, lookup_s, text == plain["choices"][0]["text"]))
        print(f"  {len(tokens) - shared:4d} new prompt tokens, {written:3d} written: greedy {plain_s:5.1f} s, "
              f"lookup {lookup_s:5.1f} s with {accepted:3d} drafted tokens accepted")
    ratio = statistics.median(lookup / plain for plain, lookup, _ in rows)
    print(f"prompt lookup (draft {args.draft}, n-grams {args.ngrams}): median {statistics.median(r[1] for r in rows):.1f} s "
          f"vs greedy {statistics.median(r[0] for r in rows):.1f} s, median ratio {ratio:.2f}; "
          f"same text {sum(r[2] for r in rows)}/{len(rows)}")


def llama_system_info() -> str:
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode().strip(" |")


if __name__ == "__main__":
    main()
