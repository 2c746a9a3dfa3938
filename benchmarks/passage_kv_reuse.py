"""Reusing the book's passages' KV states instead of reading them for every question: what it saves, what it costs.

    python benchmarks/passage_kv_reuse.py [--n 60] [--book DIR --questions CSV] [--split dev]

The idea (TurboRAG, CacheBlend): a book's passages are fixed, so the KV state of each can be computed once and placed,
position-shifted, into any prompt; the model then reads only the question. llama.cpp can do it: a passage's cells are
computed in a second sequence after a short fixed preamble, saved (`llama_state_seq_get_data`), and at question time
loaded, shifted to their place (`llama_memory_seq_add`) and copied into the prompt's sequence; the labels between
passages (`[2] `) and the question are read as usual. What it cannot give is attention between passages: each
passage was read alone.

The benchmark answers `--n` answerable questions of a labeled split twice with the zero-shot program reading five
whole passages (the compact context picks sentences per question, so nothing of it is reusable): once read as usual,
once with every passage's KV encoded alone and reused. DSPy's cache is off. It prints, for each, every key fact
stated, token F1, answerable questions refused, unreadable replies, and the seconds per answer once the passages'
states are computed (a second pass over the same questions). Run it alone: it is model-heavy.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.cli import load_settings
from bookrag.config import BUNDLED_BOOK, BUNDLED_QUESTIONS
from bookrag.questions import load_questions

PREAMBLE_SYSTEM = "Answer questions using the numbered passages of a book."
_MARK = "\u2063"  # where the preamble ends, in its rendering by the chat template
SCRATCH = 1  # the sequence a passage is read in before its cells join the prompt's (llama-cpp-python's is 0)


def passage_pieces(content: str) -> list[tuple[bool, str]]:
    """The user message as (is a passage, text) pieces: passage texts after their `[n] ` labels, the rest between."""
    first = content.find("[1] ")
    if first < 0:
        return [(False, content)]
    pieces, at, n = [(False, content[: first + 4])], first + 4, 1
    while True:
        label = f"\n\n[{n + 1}] "
        nxt = content.find(label, at)
        end = nxt if nxt >= 0 else max(content.find("\n\n[[ ## ", at), at)
        pieces.append((True, content[at:end]))
        if nxt < 0:
            return [*pieces, (False, content[end:])]
        pieces.append((False, label))
        at, n = nxt + len(label), n + 1


class PassageKV:
    """Composes a prompt's KV cache from passages read alone, in the engine's llama.cpp model."""

    def __init__(self, engine):
        self.engine = engine
        self.states: dict[str, bytes] = {}
        self.widened = False

    def widen(self, llama) -> None:
        """llama-cpp-python opens one sequence; the scratch sequence needs a second, in one unified cache."""
        if self.widened:
            return
        from llama_cpp import _internals

        params = llama.context_params
        params.n_seq_max, params.kv_unified = 2, True
        old = llama._ctx
        llama._ctx = llama._stack.enter_context(contextlib.closing(
            _internals.LlamaContext(model=llama._model, params=params, verbose=False)))
        old.close()
        llama.n_tokens = 0
        self.widened = True

    def prompt(self, llama, messages) -> list[int] | None:
        """Fill the KV cache with the prompt up to its last piece, passages from their states; the prompt's tokens
        (None: no passages in it)."""
        import llama_cpp

        formatter = self.engine._formatter[True]
        rendered = formatter(messages=messages).prompt
        content = messages[-1]["content"]
        at = rendered.rfind(content)
        pieces = passage_pieces(content)
        if at < 0 or len(pieces) == 1:
            return None
        tokens_of = lambda text: llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        parts = [(False, tokens_of(rendered[:at] + pieces[0][1]))]
        parts += [(is_passage, tokens_of(text)) for is_passage, text in pieces[1:]]
        parts[-1] = (False, parts[-1][1] + tokens_of(rendered[at + len(content):]))
        preamble_text = formatter(messages=[{"role": "system", "content": PREAMBLE_SYSTEM},
                                            {"role": "user", "content": pieces[0][1] + _MARK}]).prompt
        preamble = tokens_of(preamble_text[: preamble_text.index(_MARK)])
        first = parts[0][1]
        if llama.n_tokens >= len(first) and llama.input_ids[: len(first)].tolist() == first:
            llama.n_tokens = len(first)  # the instructions and the question's opening are still in the cache
        else:
            llama.reset()
            llama.eval(first)
        memory = llama_cpp.llama_get_memory(llama._ctx.ctx)
        for is_passage, tokens in parts[1:-1]:
            if not is_passage:
                llama.eval(tokens)
                continue
            llama_cpp.llama_memory_seq_rm(memory, -1, llama.n_tokens, -1)
            llama_cpp.llama_memory_seq_rm(memory, SCRATCH, -1, -1)
            self.load(llama, memory, preamble, tokens)
            llama_cpp.llama_memory_seq_add(memory, SCRATCH, -1, -1, llama.n_tokens - len(preamble))
            llama_cpp.llama_memory_seq_cp(memory, SCRATCH, 0, -1, -1)
            llama_cpp.llama_memory_seq_rm(memory, SCRATCH, -1, -1)
            llama.input_ids[llama.n_tokens: llama.n_tokens + len(tokens)] = tokens
            llama.n_tokens += len(tokens)
        return [t for _, tokens in parts for t in tokens]

    def load(self, llama, memory, preamble: list[int], tokens: list[int]) -> None:
        """The passage's cells into the scratch sequence, at the positions after the preamble: from its saved
        state, or read after the preamble (and saved)."""
        import llama_cpp

        key = hashlib.sha256(np.asarray([*preamble, -1, *tokens], dtype=np.int32).tobytes()).hexdigest()
        state = self.states.get(key)
        if state is not None:
            buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
            if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(state), SCRATCH):
                raise RuntimeError("llama.cpp could not load a passage state")
            return
        batch = llama._batch
        sequence = preamble + tokens
        for start in range(0, len(sequence), llama.n_batch):
            chunk = sequence[start: start + llama.n_batch]
            batch.set_batch(chunk, n_past=start, logits_all=False)
            for i in range(len(chunk)):
                batch.batch.seq_id[i][0] = SCRATCH
            llama._ctx.decode(batch)
        llama_cpp.llama_memory_seq_rm(memory, SCRATCH, 0, len(preamble))
        size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, SCRATCH)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, buffer, size, SCRATCH)
        self.states[key] = bytes(buffer[:written])


def reuse_passages(engine) -> PassageKV:
    """Make `engine` (a LlamaCppEngine) compose its prompts from passages read alone."""
    from programs.lm import llama_cpp_engine as module

    composer = PassageKV(engine)

    @contextlib.contextmanager
    def completion(request, stream):
        model = engine._load()
        llama = model.llama
        with model.lock:
            composer.widen(llama)
            messages = module.chat_messages(request)
            tokens, stop = engine._prompt_tokens(llama, messages)
            tokens = composer.prompt(llama, messages) or tokens
            reused = module._cached_prefix(llama, tokens)
            yield llama.create_completion(
                tokens, max_tokens=request.config.max_tokens or engine.max_tokens, temperature=0.0, top_p=1.0,
                stop=[*stop, *request.config.stop], stream=stream,
            ), lambda written: module.Usage(input_tokens=len(tokens), output_tokens=written, cache_read_tokens=reused)

    engine._completion = completion
    return composer


def run(program, questions) -> tuple[dict, list[float]]:
    from programs.evaluate.reports import aggregate, question_rows

    rows = question_rows(program, questions, progress=False)
    figures = aggregate(rows)
    return figures, [r.latency_ms / 1000 for r in rows if r.lm_answered]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--book", type=Path, default=BUNDLED_BOOK)
    parser.add_argument("--questions", type=Path, default=BUNDLED_QUESTIONS)
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()
    from programs.compile.artifact import open_program

    questions = [q for q in load_questions(args.questions) if q.split == args.split and q.answerable][: args.n]
    settings = load_settings(book_dir=args.book)
    program = open_program(settings, book_dir=args.book, zero_shot=True, announce=lambda message: None)
    program.set_context_words(0)  # five whole passages, the reusable unit
    program.lm = program.lm.copy(cache=False)  # both ways read the same prompts: each must reach the model
    program.warm_up()
    print(f"{len(questions)} answerable {args.split} questions of {args.book.name}, five whole passages each")
    print(f"{'passages':30} {'every key fact':>14} {'token F1':>8} {'refused':>7} {'unreadable':>10} {'s/answer p50':>12}")
    for name in ("read with the question", "encoded alone, reused"):
        if name == "encoded alone, reused":
            reuse_passages(program.lm.engine)
            run(program, questions)  # computes every passage's state once
        figures, seconds = run(program, questions)
        print(f"{name:30} {figures['key_fact_accuracy']:14.3f} {figures['token_f1']:8.3f} "
              f"{figures['false_refusal_rate']:7.3f} {figures['parse_failure_rate']:10.3f} "
              f"{statistics.median(seconds):12.1f}")


if __name__ == "__main__":
    main()
