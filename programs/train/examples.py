"""A training example as tokens: the program's prompt for one question, as llama.cpp reads it, and the reply the
reader should write, as the model writes it (ending with its end-of-turn token)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrainingExample:
    id: str
    prefix: tuple[int, ...]  # the prompt's fixed part (the system message): the same in every example of a program
    tokens: tuple[int, ...]  # what follows: the user's turn, the opened reply turn, the reply and its end token
    reply_start: int  # tokens[reply_start:] is the reply, the only part the loss is taken on

    @property
    def digest(self) -> str:
        """What the example is, as 16 hex digits: the cache key of its frozen layers' output."""
        data = np.asarray([*self.prefix, -1, *self.tokens, -1, self.reply_start], dtype=np.int64).tobytes()
        return hashlib.sha256(data).hexdigest()[:16]


def training_example(engine, example_id: str, messages: list[dict[str, str]]) -> TrainingExample:
    """`messages`: the chat that ends with the reply to learn (DSPy's `adapter.format_finetune_data`); `engine`: the
    LlamaCppEngine whose chat template and tokenizer the program answers through."""
    prefix, prompt = engine.chat_tokens(messages[:-1])
    reply = engine.reply_tokens(messages[-1]["content"])
    return TrainingExample(example_id, tuple(prefix), tuple(prompt[len(prefix):] + reply), len(prompt) - len(prefix))


def shared_prefix(examples: list[TrainingExample]) -> list[TrainingExample]:
    """The examples with one prefix for all: theirs when they share it, else none (each keeps its whole prompt)."""
    if len({e.prefix for e in examples}) <= 1:
        return examples
    return [TrainingExample(e.id, (), e.prefix + e.tokens, e.reply_start + len(e.prefix)) for e in examples]
