"""The answer field as the LM writes it: DSPy's streaming (`dspy.streamify`) with a listener on `answer`.

A streamed answer is a draft. The checks run only once the whole reply is in, and they may refuse it or fall back
to the book's own sentences: the returned Prediction is what counts, and the caller shows it in the draft's place.
"""

from __future__ import annotations

from collections.abc import Callable

import dspy
from dspy.streaming import StreamListener, StreamResponse


class AnswerStreamListener(StreamListener):
    """DSPy's listener for the `answer` field of one predictor, also under `BookChatAdapter` (which writes
    ChatAdapter's `[[ ## field ## ]]` headers, but by another class name)."""

    def __init__(self, predict: dspy.Predict):
        super().__init__(signature_field_name="answer", predict=predict, predict_name="generate")
        self.adapter_identifiers["BookChatAdapter"] = self.adapter_identifiers["ChatAdapter"]


def stream_answer(program: dspy.Module, predict: dspy.Predict, on_text: Callable[[str], None],
                  **inputs) -> dspy.Prediction:
    """`program(**inputs)`, calling `on_text` with each piece of `predict`'s answer as it is written. A cached
    reply streams nothing: the Prediction carries it whole."""
    streaming = dspy.streamify(program, stream_listeners=[AnswerStreamListener(predict)], async_streaming=False)
    prediction = None
    for item in streaming(**inputs):
        prediction = _passed_on(item, on_text) or prediction
    return prediction


async def astream_answer(program: dspy.Module, predict: dspy.Predict, on_text: Callable[[str], None],
                         **inputs) -> dspy.Prediction:
    """`stream_answer` on an event loop: `await program.acall(**inputs)` (its `aforward`)."""
    streaming = dspy.streamify(program, stream_listeners=[AnswerStreamListener(predict)], is_async_program=True)
    prediction = None
    async for item in streaming(**inputs):
        prediction = _passed_on(item, on_text) or prediction
    return prediction


def _passed_on(item, on_text: Callable[[str], None]) -> dspy.Prediction | None:
    """A piece of the answer goes to `on_text`; the final Prediction is returned."""
    if isinstance(item, StreamResponse):
        on_text(item.chunk)
    return item if isinstance(item, dspy.Prediction) else None
