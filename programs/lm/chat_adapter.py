"""`BookChatAdapter`: DSPy's ChatAdapter, reading the output shapes small models write.

Small local models follow the `[[ ## field ## ]]` format well but write typed values loosely: citations as
`[2], [3]`, `2, 3`, `passage 2` or `[2, 3]`, a verdict as `True.` or `yes`. ChatAdapter rejects those and
retries the whole call through JSONAdapter, doubling the latency. This adapter reads them directly, makes no
second call, and when a reply still cannot be parsed, drops it from DSPy's response cache so a rerun asks again.
"""

from __future__ import annotations

import re
from typing import Any, get_args, get_origin

import dspy
from dspy.adapters.chat_adapter import ChatAdapter
from dspy.utils.exceptions import AdapterParseError

_HEADER = re.compile(r"\[\[ ## (\w+) ## \]\]")
# ChatAdapter's replies end with `[[ ## completed ## ]]`; nothing from it on is read, so the local model stops there.
REPLY_END = "[[ ## completed"
_NUMBER = re.compile(r"\d+")
_TRUE = {"true", "yes", "y", "1", "answerable"}
_FALSE = {"false", "no", "n", "0", "unanswerable", "not answerable", "none"}


def parse_int_list(text: str) -> list[int]:
    """Every whole number in the text, in order, without repeats: `[2], [3]`, `2, 3`, `passage 2`, `[2, 3]`."""
    numbers = []
    for match in _NUMBER.findall(text):
        if int(match) not in numbers:
            numbers.append(int(match))
    return numbers


def parse_bool(text: str) -> bool | None:
    """`True`, `true.`, `Yes`, `**False**` ...; None when the text is neither."""
    word = text.strip().strip("`*.'\"!").strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


class BookChatAdapter(ChatAdapter):
    def __init__(self, **kwargs):
        # One LM call per answer: a reply we cannot read is an error, not a second full-price call.
        kwargs.setdefault("use_json_adapter_fallback", False)
        super().__init__(**kwargs)

    # The prompt's fixed part (system message, demos) is read once and reused from the KV cache; what changes per
    # question is paid for on every call. So the output-format reminder ChatAdapter repeats in every user message
    # moves to the end of the system message, and an empty input field (no chat history) is left out.
    def format_task_description(self, signature) -> str:
        reminder = super().user_message_output_requirements(signature)
        return f"{super().format_task_description(signature)}\n\n{reminder}"

    def user_message_output_requirements(self, signature) -> None:
        return None

    def format_user_message_content(self, signature, inputs, prefix="", suffix="", main_request=False) -> str:
        present = {k: v for k, v in inputs.items() if not (isinstance(v, str) and not v.strip())}
        return super().format_user_message_content(signature, present, prefix, suffix, main_request)

    def parse(self, signature, completion: str) -> dict[str, Any]:
        try:
            return super().parse(signature, _normalized(signature, completion))
        except AdapterParseError:
            forget = getattr(dspy.cache, "forget_last_reply", None)
            if forget is not None:
                forget()
            raise


def _normalized(signature, completion: str) -> str:
    """The completion with list[int] and bool fields rewritten in the form ChatAdapter's parser accepts."""
    lines, field = [], None
    sections: list[tuple[str | None, list[str]]] = [(None, lines)]
    for line in completion.splitlines():
        match = _HEADER.match(line.strip())
        if match:
            field, rest = match.group(1), line.strip()[match.end():].strip()
            lines = [rest] if rest else []
            sections.append((field, lines))
        else:
            lines.append(line)
    out = []
    for name, body in sections:
        text = "\n".join(body).strip()
        field_info = signature.output_fields.get(name) if name else None
        if field_info is not None:
            text = _coerce(text, field_info.annotation)
        out.append(text if name is None else f"[[ ## {name} ## ]]\n{text}")
    return "\n\n".join(part for part in out if part)


def _coerce(text: str, annotation) -> str:
    if get_origin(annotation) is list and get_args(annotation) == (int,):
        return str(parse_int_list(text))
    if annotation is bool:
        verdict = parse_bool(text.splitlines()[0] if text else "")
        return text if verdict is None else str(verdict)
    return text
