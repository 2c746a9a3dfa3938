"""Warm-up: load the LM and read a predictor's fixed prompt prefix into its prompt cache.

The instructions and compiled demos are the same for every question; read once before the first question, they
cost that question no more than the others (llama.cpp reuses the longest common prompt prefix; a provider's prompt
cache does the same)."""

from __future__ import annotations

import logging

import dspy
from dspy.lm15 import Config, Message, Request

from programs.lm.chat_adapter import BookChatAdapter
from programs.lm.language_model import lm_errors


def warm_up_lm(lm: dspy.LM, predict: dspy.Predict, placeholder_inputs: dict[str, str]) -> None:
    """One one-token call, never cached, of `predict`'s prompt with `placeholder_inputs` in its input fields."""
    system, *turns = BookChatAdapter().format(predict.signature, predict.demos, placeholder_inputs)
    messages = tuple(Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"])
                     for m in turns)
    dspy_lm_log = logging.getLogger("dspy.clients.lm")  # it warns of a truncated reply: here, on purpose
    level = dspy_lm_log.level
    dspy_lm_log.setLevel(logging.ERROR)
    try:
        with dspy.context(adapter=BookChatAdapter(), lm=lm), lm_errors():
            lm(Request(model=lm.model, system=system["content"], messages=messages, config=Config(max_tokens=1)),
               cache=False)
    finally:
        dspy_lm_log.setLevel(level)
