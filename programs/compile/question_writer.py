"""Writers of answerable questions from one passage of the book, for a synthetic question set.

`AnswerableQuestion` has the LM write a question, its answer and the answer's key facts, and keeps the question only
when every key fact occurs verbatim in the passage. `ClozeQuestion` needs no LM: a fact sentence with its fact
replaced by "what" (used to measure the synthetic route when no capable LM is at hand).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import dspy

from programs.evaluate.metrics import fact_present
from programs.text.passage_sentences import passage_sentences
from retrievers.passage import Passage

MAX_FACT_WORDS = 6  # key facts are short spans (datasets/README.md)
_UNIT = r"%|ms|s|Hz|kHz|kg|g|m|cm|mm|km|GB|MB|TB|W|V|N|fps|degrees|seconds|minutes|hours|m/s|rad/s"
# A number with its unit, a decimal or a number of two digits or more ("ROS 2" is a name), or a code span.
_NUMBER_FACT = re.compile(rf"\b\d+(?:[.,]\d+)*\s?(?:{_UNIT})(?![\w/])|\b\d+\.\d+\b|\b\d{{2,}}\b|`[^`]{{3,40}}`")
_NAME_FACT = re.compile(r"(?<=[a-z,;:(] )[A-Z][\w.+-]*[A-Za-z0-9](?: [A-Z0-9][\w.+-]*[A-Za-z0-9])*")  # mid-sentence


@dataclass(frozen=True)
class WrittenQuestion:
    question: str
    key_facts: tuple[str, ...]
    answer: str


class WriteQuestion(dspy.Signature):
    """Write one question a reader of this book could ask that the passage answers on its own, the answer in one
    sentence, and the answer's key facts: one to three short spans (at most six words each) copied word for word
    from the passage, such as a number with its unit, a name, a command or a setting. Ask only about what the
    passage states; do not mention "the passage" in the question."""

    section: str = dspy.InputField(desc="the book section the passage comes from")
    passage: str = dspy.InputField()
    question: str = dspy.OutputField()
    answer: str = dspy.OutputField()
    key_facts: list[str] = dspy.OutputField(desc="spans copied verbatim from the passage")


class AnswerableQuestion(dspy.Module):
    def __init__(self):
        super().__init__()
        self.write = dspy.Predict(WriteQuestion)

    def forward(self, passage: Passage) -> WrittenQuestion | None:
        """The written question, or None when a key fact is not verbatim in the passage (the answer would not be
        the book's) or the reply is unusable."""
        written = self.write(section=passage.heading or passage.title, passage=passage.text)
        question, facts = (written.question or "").strip(), [str(f).strip() for f in written.key_facts or []]
        grounded = facts and all(f and len(f.split()) <= MAX_FACT_WORDS and fact_present(f, passage.text)
                                 for f in facts)
        if not question.endswith("?") or not grounded:
            return None
        return WrittenQuestion(question, tuple(facts), (written.answer or "").strip())


class ClozeQuestion:
    """No LM: a fact sentence of the passage with its fact (a number with its unit, a code span, else a name)
    replaced by "what", as a question ("Kestrel has a mass of what?"); the fact is the key fact."""

    def __call__(self, passage: Passage) -> WrittenQuestion | None:
        for sentence in passage_sentences([passage]):
            fact = _NUMBER_FACT.search(sentence.text) or _NAME_FACT.search(sentence.text)
            words = sentence.text.split()
            if sentence.code or not fact or len(fact.group().split()) > MAX_FACT_WORDS or not 6 <= len(words) <= 40:
                continue
            asked = (sentence.text[: fact.start()] + "what" + sentence.text[fact.end():]).rstrip(" .:;!?")
            return WrittenQuestion(f"{asked}?", (fact.group().strip("` "),), sentence.text)
        return None
