"""`ReplyFile`: the base reader's replies to the training prompts, kept so that a training asks each prompt once.

One JSON object a line: the reply's key (book, question id, passage order, whether the reference answer was given
as a hint), the SHA-256 of what was asked (the model's identity and the prompt's inputs) and the reply's fields
(reasoning, answer, citations, answerable), or null for a reply the adapter could not read. Never the book's text:
the inputs are rebuilt by retrieval, and a reply whose hash no longer matches them (another book, index, model or
prompt) is asked again. Each reply is appended and flushed as it comes, so a killed run keeps what it had and the next
one goes on from there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from bookrag.atomic_file import atomic_write
from bookrag.errors import DatasetError
from programs.rag.reader_inputs import ReaderInputs

log = logging.getLogger(__name__)


def reply_key(book: str, question_id: str, order: Sequence[int], hinted: bool) -> str:
    """`book/id/3-1-2-5-4/own` (or `/hinted`): a reply's place in the file."""
    return f"{book}/{question_id}/{'-'.join(map(str, order))}/{'hinted' if hinted else 'own'}"


class ReplyFile:
    def __init__(self, path: Path, model_identity: str):
        self.path, self.model_identity = Path(path), model_identity
        self.replies: dict[str, tuple[str, dict | None]] = self._read()
        self.asked = 0  # replies this run asked the model for

    def reply(self, program, key: str, inputs: ReaderInputs) -> dict | None:
        """The saved reply to `inputs` under `key`, or the program's reader asked now and the reply saved."""
        digest = self.digest(inputs)
        saved = self.replies.get(key)
        if saved is not None and saved[0] == digest:
            return saved[1]
        prediction = program.read(inputs)
        reply = None if prediction is None else {
            "reasoning": str(prediction.reasoning or ""), "answer": str(prediction.answer or ""),
            "citations": list(prediction.citations or []), "answerable": bool(prediction.answerable)}
        self._append(key, digest, reply)
        self.asked += 1
        return reply

    def digest(self, inputs: ReaderInputs) -> str:
        asked = json.dumps({"model": self.model_identity, **inputs.fields()}, sort_keys=True)
        return hashlib.sha256(asked.encode()).hexdigest()

    def _read(self) -> dict[str, tuple[str, dict | None]]:
        if not self.path.exists():
            return {}
        replies = {}
        text = self.path.read_text(encoding="utf-8")
        lines = text.split("\n")
        complete, partial = lines[:-1], lines[-1]
        for number, line in enumerate(complete, start=1):
            try:
                record = json.loads(line)
                replies[record["key"]] = (record["sha256"], record["reply"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DatasetError(f"{self.path}, line {number}: not a saved reply ({exc}); delete the line, and the "
                                   "next run asks for that reply again") from None
        if partial:  # a run killed mid-line: keep the complete lines, so the next reply starts a line of its own
            log.warning("%s ended in a partial line (a killed run); it is dropped and its reply asked again", self.path)
            atomic_write(self.path, lambda temp: temp.write_text("".join(f"{line}\n" for line in complete),
                                                                 encoding="utf-8"))
        return replies

    def _append(self, key: str, digest: str, reply: dict | None) -> None:
        self.replies[key] = (digest, reply)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"key": key, "sha256": digest, "reply": reply}, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
