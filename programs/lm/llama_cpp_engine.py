"""An instruction-tuned GGUF model in-process: a DSPy 3.4 custom LM engine over llama-cpp-python.

Used as `dspy.LM("local/<name>", engine=LlamaCppEngine(...))`. DSPy owns caching, history and adapters; the
engine turns one canonical `dspy.lm15.Request` into one `dspy.lm15.Response`: it renders the messages with the
chat template the GGUF carries, and generates with one llama.cpp model that stays loaded.

Speed comes from the prompt prefix: llama.cpp keeps the KV cache of the last prompt, and a new prompt that starts
with the same tokens (the system message and the compiled demos) only evaluates what follows. The engine reports
that reuse as `cache_read_tokens`, and keeps each prefix's KV state on disk (`PromptPrefixStore`) for the next
process.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from dspy.lm15 import (
    ConfigurationError,
    ContextLengthError,
    Message,
    Request,
    Response,
    StreamDeltaEvent,
    StreamEndEvent,
    StreamStartEvent,
    TextDelta,
    TextPart,
    UnsupportedFeatureError,
    Usage,
)

from bookrag.file_checksum import file_sha256
from programs.lm.chat_adapter import REPLY_END
from programs.lm.lora_adapter_check import check_lora_adapter, check_lora_file
from programs.lm.packaged_model import QWEN_CODER_1_5B, PackagedModel
from programs.lm.prompt_prefix_store import MIN_TOKENS, PromptPrefixStore

# llama.cpp's OpenMP threads spin while they wait for each other. Next to any other busy process on 2 cores that
# spinning starves the model: decode fell from 15 to 0.5 tokens/s (measured). Passive waiting sleeps instead. It must
# be set before llama_cpp loads OpenMP; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_ROLES = {"user": "user", "developer": "system", "assistant": "assistant"}


@dataclass(frozen=True)
class LoadedModel:
    """One llama.cpp model in memory, shared by every engine of the process that names its file."""

    llama: object  # llama_cpp.Llama
    # What its prompt prefixes' KV states are keyed by: the file, the context size and the weights' identity (a state
    # read with an adapter is wrong without it, and the other way round). Each engine keeps them in its own folder.
    prefix_key: str
    lock: threading.Lock = field(default_factory=threading.Lock)  # a llama.cpp context is not thread-safe


# One loaded model per (file, n_ctx, n_threads), for the whole process.
_MODELS: dict[tuple, LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def chat_messages(request: Request) -> list[dict[str, str]]:
    """The request as chat-template messages: the system text first, then the turns."""
    messages = [{"role": "system", "content": _text(request.system)}] if request.system else []
    for index, message in enumerate(request.messages):
        role = _ROLES.get(message.role)
        if role is None or not all(isinstance(part, TextPart) for part in message.parts):
            raise UnsupportedFeatureError(
                "the local model reads text from system, user and assistant messages only", feature=f"messages[{index}]"
            )
        messages.append({"role": role, "content": "".join(part.text for part in message.parts)})
    return messages


def _text(system) -> str:
    return system if isinstance(system, str) else "".join(part.text for part in system)


class LlamaCppEngine:
    """Runs a chat GGUF: `gguf` (a user's file) or, when None, the packaged default assembled into `models_dir`;
    with `adapter`, a LoRA adapter GGUF (a trained reader, programs/train/) applied to it.

    The model loads on the first call and is shared by every engine of the process that names the same file
    (notebooks that load a program twice, `--compare`): a lock serializes calls, because a llama.cpp context is
    not thread-safe (DSPy's Evaluate and optimizers use threads).

    n_threads (BOOKRAG_LM_THREADS): on an idle 2-core machine 2 threads are fastest, but llama.cpp's threads
    spin-wait on each other, so next to another busy process 1 thread decodes several times faster (measured).
    """

    def __init__(self, gguf: str | Path | None, models_dir: str | Path, *, adapter: str | Path | None = None,
                 max_tokens: int = 256, n_ctx: int = 4096, n_threads: int = 2):
        self.gguf = Path(gguf).expanduser() if gguf else None
        self.adapter = Path(adapter).expanduser() if adapter else None
        self.models_dir = Path(models_dir)
        self.max_tokens, self.n_ctx, self.n_threads = max_tokens, n_ctx, n_threads
        self.load_seconds: float | None = None  # how long the first load took, reported apart from answers
        self._formatter = None

    @property
    def packaged(self) -> PackagedModel | None:
        return None if self.gguf else QWEN_CODER_1_5B

    @property
    def name(self) -> str:
        return self.gguf.stem if self.gguf else QWEN_CODER_1_5B.name

    @property
    def identity(self) -> str:
        """The weights the answers come from: the packaged model by its checksum, a file of your own by its path, size
        and modification time (hashing a GB at every start would cost seconds); and the adapter by its checksum. Part
        of every cached answer's key, and of every stored prompt prefix's."""
        if self.gguf is None:
            model = f"sha256:{QWEN_CODER_1_5B.sha256}"
        elif not (path := self.gguf.resolve()).is_file():
            model = str(path)  # the first call says it is not a file
        else:
            stat = path.stat()
            model = f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
        if self.adapter is None:
            return model
        return f"{model}+lora:{adapter_checksum(self.adapter) if self.adapter.is_file() else self.adapter}"

    @property
    def _key(self) -> tuple:
        """What the process-wide model is shared by: the weights themselves (a file replaced at the same path, an
        adapter retrained in place, is another model), the context size and the threads."""
        return self.identity, self.n_ctx, self.n_threads

    def __deepcopy__(self, memo):
        # Optimizers and `Module.load` deep-copy programs; the copies share this engine (and its loaded model).
        return self

    def complete(self, request: Request) -> Response:
        with self._completion(request, stream=False) as (out, usage):
            choice = out["choices"][0]
            return Response(
                id=out["id"],
                model=request.model,
                message=Message.assistant(choice["text"]),
                finish_reason="length" if choice["finish_reason"] == "length" else "stop",
                usage=usage(out["usage"]["completion_tokens"]),
            )

    def stream(self, request: Request) -> Iterator[StreamStartEvent | StreamDeltaEvent | StreamEndEvent]:
        """The reply as it is written: DSPy's streaming (`dspy.streamify`) shows the answer field word by word."""
        with self._completion(request, stream=True) as (chunks, usage):
            yield StreamStartEvent(model=request.model)
            text, finish = [], "stop"
            for chunk in chunks:
                choice = chunk["choices"][0]
                if choice["text"]:
                    text.append(choice["text"])
                    yield StreamDeltaEvent(delta=TextDelta(text=choice["text"]))
                finish = "length" if choice["finish_reason"] == "length" else finish
            written = usage(len(self._load().llama.tokenize("".join(text).encode("utf-8"), add_bos=False)))
        yield StreamEndEvent(finish_reason=finish, usage=written)

    @contextmanager
    def _completion(self, request: Request, stream: bool):
        """llama.cpp's completion of `request` (chunks when `stream`), with the model locked until the block ends,
        and `usage(completion_tokens)` for the Usage to report."""
        if request.tools:
            raise UnsupportedFeatureError("the local model cannot call tools", feature="tools")
        config = request.config
        model = self._load()
        llama = model.llama
        with model.lock:
            messages = chat_messages(request)
            tokens, stop = self._prompt_tokens(llama, messages)
            prefixes = PromptPrefixStore(self.models_dir / "prompt-prefixes", model.prefix_key)
            _load_prefix(llama, prefixes, self._prefix_tokens(llama, messages, tokens), tokens)
            reused = _cached_prefix(llama, tokens)
            try:
                yield llama.create_completion(
                    tokens,
                    # Uncapped, a small model can run to the end of the context: never send None.
                    max_tokens=config.max_tokens or self.max_tokens,
                    temperature=0.0 if config.temperature is None else config.temperature,
                    top_p=1.0 if config.top_p is None else config.top_p,
                    stop=[*stop, *config.stop, REPLY_END],
                    seed=config.seed,
                    stream=stream,
                ), lambda written: Usage(input_tokens=len(tokens), output_tokens=written, cache_read_tokens=reused)
            except ValueError as exc:  # a stream raises it at its first chunk
                if "exceed context window" in str(exc):
                    raise ContextLengthError(str(exc), provider="local") from exc
                raise

    def model_path(self) -> Path:
        """The GGUF file the engine runs (the packaged one is assembled first if it is not there yet)."""
        return self.gguf if self.gguf else QWEN_CODER_1_5B.path(self.models_dir)

    def chat_tokens(self, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
        """(prefix, prompt): the tokens llama.cpp reads for chat `messages`, with the reply's turn opened, and their
        leading part that every prompt of a program shares (every message but the last). Training reads examples
        through this, so it learns from the very tokens the model is given here."""
        llama = self._load().llama
        with self._load().lock:
            tokens, _ = self._prompt_tokens(llama, messages)
            return self._prefix_tokens(llama, messages, tokens), tokens

    def reply_tokens(self, text: str) -> list[int]:
        """A reply as the model writes it: its tokens, then the end-of-turn token it stops at."""
        llama = self._load().llama
        return llama.tokenize(text.encode("utf-8"), add_bos=False, special=False) + [llama.token_eos()]

    def _prompt_tokens(self, llama, messages: list[dict[str, str]], reply: bool = True) -> tuple[list[int], list[str]]:
        """The chat template's rendering of `messages` (opening the reply's turn if `reply`), tokenized, and the
        template's stop strings."""
        if self._formatter is None:
            self._formatter = {open_turn: _chat_formatter(llama, self.name, open_turn) for open_turn in (True, False)}
        rendered = self._formatter[reply](messages=messages)
        tokens = llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        stop = rendered.stop if isinstance(rendered.stop, list) else [rendered.stop] if rendered.stop else []
        return tokens, stop

    def _prefix_tokens(self, llama, messages: list[dict[str, str]], tokens: list[int]) -> list[int]:
        """The prompt's fixed part: every message before the question (the system message, the demos), as the
        leading tokens of `tokens`; [] when the template does not render it as such a prefix."""
        if len(messages) < 2:
            return []
        prefix, _ = self._prompt_tokens(llama, messages[:-1], reply=False)
        return prefix if tokens[: len(prefix)] == prefix else []

    def _load(self) -> LoadedModel:
        """The model, loaded by the first engine that names the same weights."""
        with _MODELS_LOCK:
            key = self._loaded_key = self._key
            if key not in _MODELS:
                started = time.perf_counter()
                _MODELS[key] = self._open()
                self.load_seconds = time.perf_counter() - started
            return _MODELS[key]

    def _open(self) -> LoadedModel:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ConfigurationError(
                'the local model needs llama-cpp-python: run `make setup`, or CMAKE_ARGS="-DGGML_NATIVE=OFF" '
                "pip install llama-cpp-python (it compiles for minutes)"
            ) from exc
        path = self.model_path()
        if not path.is_file():
            raise ConfigurationError(f"BOOKRAG_LOCAL_MODEL={path} is not a file: point it at a .gguf model")
        if self.adapter is not None and not self.adapter.is_file():
            raise ConfigurationError(f"BOOKRAG_LOCAL_ADAPTER={self.adapter} is not a file: point it at a LoRA adapter "
                                     "GGUF, or set it to none")
        if self.adapter is not None:  # llama.cpp crashes the process on an adapter it cannot apply
            check_lora_adapter(self.adapter, path)
        adapter = {"lora_path": str(self.adapter)} if self.adapter else {}
        # Kept off the terminal: llama.cpp warns for every adapted matrix that it cannot use its repacked kernels.
        with LlamaOutput() as output:
            try:
                llama = Llama(str(path), n_ctx=self.n_ctx, n_threads=self.n_threads, verbose=False, **adapter)
            except ValueError as exc:  # "Failed to load model from file", "Failed to ... LoRA adapter ..."
                why = f"{exc}; llama.cpp: {output.last_line()}"
                if self.adapter:
                    raise ConfigurationError(f"cannot load {path} with the adapter {self.adapter} ({why}): is the "
                                             "adapter a LoRA GGUF trained for this model?") from None
                raise ConfigurationError(f"cannot load {path} with llama.cpp ({why}): is it a GGUF model?") from None
        return LoadedModel(llama, f"{path.name}:{path.stat().st_size}:{self.n_ctx}:{self.identity}")

    def close(self) -> None:
        """Free the model's memory; the next call loads it again."""
        with _MODELS_LOCK:
            loaded = _MODELS.pop(getattr(self, "_loaded_key", self._key), None)
        if loaded is not None:
            with loaded.lock:
                loaded.llama.close()

    # DSPy saves an LM with a custom engine (e.g. a predictor's own LM) through these two.
    def dump_state(self) -> dict:
        return {"gguf": str(self.gguf) if self.gguf else None, "models_dir": str(self.models_dir),
                "adapter": str(self.adapter) if self.adapter else None,
                "max_tokens": self.max_tokens, "n_ctx": self.n_ctx, "n_threads": self.n_threads}

    @classmethod
    def load_state(cls, state: dict) -> LlamaCppEngine:
        return cls(state.get("gguf"), **{k: v for k, v in state.items() if k != "gguf"})


class LlamaOutput:
    """While open, what llama.cpp writes goes to a file instead of the terminal: from C to file descriptor 2, and from
    Python through llama-cpp-python's log callback to sys.stderr. `last_line()` quotes it for an error message."""

    def __enter__(self) -> Self:
        sys.stderr.flush()
        self._sink, self._saved, self._python = tempfile.TemporaryFile(), os.dup(2), io.StringIO()
        os.dup2(self._sink.fileno(), 2)
        self._redirect = redirect_stderr(self._python)
        self._redirect.__enter__()
        return self

    def last_line(self) -> str:
        self._sink.seek(0)
        lines = (self._sink.read().decode("utf-8", "replace") + self._python.getvalue()).strip().splitlines()
        return lines[-1].strip() if lines else "(nothing)"

    def __exit__(self, *exc) -> None:
        self._redirect.__exit__(*exc)
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._sink.close()


def adapter_checksum(path: Path) -> str:
    """The first 16 hex digits of an adapter file's sha256 (a few MB: milliseconds), remembered per file state; a
    file that is no LoRA adapter is refused first (BadAdapter), not hashed."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _CHECKSUMS:
        check_lora_file(path)
        _CHECKSUMS[key] = file_sha256(path)[:16]
    return _CHECKSUMS[key]


_CHECKSUMS: dict[tuple, str] = {}


def _load_prefix(llama, prefixes: PromptPrefixStore, prefix: list[int], tokens: list[int]) -> None:
    """Make the KV cache hold `prefix`: it already does, or from the prefix store, or read once and stored."""
    if len(prefix) < MIN_TOKENS or _cached_prefix(llama, tokens) >= len(prefix):
        return
    if not prefixes.restore(llama, prefix):
        llama.reset()
        llama.eval(prefix)
        prefixes.save(llama, prefix)


def _chat_formatter(llama, name: str, open_turn: bool = True):
    """The GGUF's own chat template, rendered with llama-cpp-python's Jinja formatter (ending with the opened
    assistant turn when `open_turn`)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigurationError(
            f"{name} carries no chat template: bookrag needs an instruction-tuned (chat) GGUF; a base model cannot "
            "follow the program's instructions"
        )

    def token(key: str) -> str:
        token_id = int(llama.metadata.get(key, -1))
        return llama.detokenize([token_id], special=True).decode("utf-8", errors="ignore") if token_id >= 0 else ""

    return Jinja2ChatFormatter(template, eos_token=token("tokenizer.ggml.eos_token_id"),
                               bos_token=token("tokenizer.ggml.bos_token_id"), add_generation_prompt=open_turn,
                               stop_token_ids=[llama.token_eos()])


def _cached_prefix(llama, tokens: list[int]) -> int:
    """How many leading tokens of `tokens` the model's KV cache already holds (llama.cpp skips them)."""
    held = llama.longest_token_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
    # llama.cpp always re-evaluates the last prompt token to get its logits.
    return min(held, len(tokens) - 1)
