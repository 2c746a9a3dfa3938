"""Why a program refused: one name per exit of the pipeline, shared by the program, its reports and its metrics."""

from __future__ import annotations

from enum import StrEnum


class RefusalReason(StrEnum):
    GATE = "gate"  # the retrieval evidence was too weak: no LM call
    MODEL = "model"  # the LM said the passages do not answer the question
    UNREADABLE_REPLY = "unreadable_reply"  # the LM's reply was no answer (unparseable, the context copied, a loop)
    NO_CITATION = "no_citation"  # the answer named no retrieved passage
    UNSUPPORTED_CLAIM = "unsupported_claim"  # a number, version or name that no retrieved passage holds
    UNSUPPORTED_CODE = "unsupported_code"  # a command, flag, path or identifier that no retrieved passage holds
    VALUE_OFF_SUBJECT = "value_off_subject"  # a number no sentence about the question's subject holds
    UNSUPPORTED_CONTENT = "unsupported_content"  # most of the answer's words are in no retrieved passage: memory
    NO_ASKED_VALUE = "no_asked_value"  # asked for a price, number or date, and the answer states none
    NOT_IN_SELECTION = "not_in_selection"  # selected-text mode: the selection does not answer it


# Refusals made after the LM wrote an answer (in generated mode): they cost an LM call.
REFUSED_AFTER_LM = frozenset({RefusalReason.MODEL, RefusalReason.UNREADABLE_REPLY, RefusalReason.NO_CITATION, RefusalReason.UNSUPPORTED_CLAIM,
                              RefusalReason.UNSUPPORTED_CODE, RefusalReason.VALUE_OFF_SUBJECT,
                              RefusalReason.UNSUPPORTED_CONTENT, RefusalReason.NO_ASKED_VALUE})
# Refused before any answer was written, or by the LM itself: a trace that demonstrates refusing.
MODEL_REFUSALS = frozenset({RefusalReason.GATE, RefusalReason.MODEL, RefusalReason.NOT_IN_SELECTION})
