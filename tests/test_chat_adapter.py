"""BookChatAdapter: the output shapes a small model writes, read in one call; an unreadable reply is not cached."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError

from programs.lm.chat_adapter import BookChatAdapter, parse_bool, parse_int_list
from programs.lm.response_cache import ResponseCache
from programs.rag.answer_with_citations import AnswerWithCitations

SIGNATURE = dspy.ChainOfThought(AnswerWithCitations).predict.signature


def reply(citations: str, answerable: str = "True") -> str:
    return (f"[[ ## reasoning ## ]]\nPassage 1 gives the height.\n\n[[ ## answer ## ]]\nKestrel is 1.2 m tall.\n\n"
            f"[[ ## citations ## ]]\n{citations}\n\n[[ ## answerable ## ]]\n{answerable}\n\n[[ ## completed ## ]]")


@pytest.mark.parametrize("written, numbers", [
    ("[2], [3]", [2, 3]),
    ("2, 3", [2, 3]),
    ("[2, 3]", [2, 3]),
    ("passage 2", [2]),
    ("Passages 2 and 3", [2, 3]),
    ("[1]", [1]),
    ("[]", []),
    ("none", []),
    ("[2, 2, 3]", [2, 3]),
])
def test_citations_parse_in_every_shape_small_models_write(written, numbers):
    assert parse_int_list(written) == numbers
    assert BookChatAdapter().parse(SIGNATURE, reply(written))["citations"] == numbers


@pytest.mark.parametrize("written, verdict", [
    ("True", True), ("true.", True), ("Yes", True), ("**True**", True),
    ("False", False), ("false", False), ("No.", False),
])
def test_the_verdict_parses_in_the_shapes_small_models_write(written, verdict):
    assert parse_bool(written) is verdict
    assert BookChatAdapter().parse(SIGNATURE, reply("[1]", written))["answerable"] is verdict


def test_the_other_fields_are_read_as_chat_adapter_reads_them():
    parsed = BookChatAdapter().parse(SIGNATURE, reply("[1]"))
    assert parsed == {"reasoning": "Passage 1 gives the height.", "answer": "Kestrel is 1.2 m tall.",
                      "citations": [1], "answerable": True}


def test_a_reply_without_the_fields_is_a_parse_error():
    with pytest.raises(AdapterParseError):
        BookChatAdapter().parse(SIGNATURE, "I would rather not say.")
    with pytest.raises(AdapterParseError):  # a verdict that is neither true nor false
        BookChatAdapter().parse(SIGNATURE, reply("[1]", "perhaps"))


def test_the_output_format_reminder_is_in_the_system_message_not_in_every_question():
    messages = BookChatAdapter().format(SIGNATURE, demos=[], inputs={"context": "[1] Intro\nKestrel is 1.2 m tall.",
                                                                     "question": "How tall?", "history": ""})
    assert "Respond with the corresponding output fields" in messages[0]["content"]
    assert "Respond with" not in messages[-1]["content"]
    assert "[[ ## history ## ]]" not in messages[-1]["content"]  # an empty input is left out


def test_a_reply_that_fails_to_parse_is_dropped_from_the_cache(tmp_path, monkeypatch):
    cache = ResponseCache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(tmp_path))
    monkeypatch.setitem(vars(dspy), "cache", cache)
    request = {"model": "local/test", "messages": [{"role": "user", "content": "How tall?"}]}
    cache.put(request, "the unreadable reply")
    with pytest.raises(AdapterParseError):
        BookChatAdapter().parse(SIGNATURE, "the unreadable reply")
    assert cache.get(request) is None  # neither memory nor disk serves it again
    assert ResponseCache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path)).get(
        request) is None
