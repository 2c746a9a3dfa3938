"""`ReaderInputs`: what the reader (`AnswerWithCitations`) reads for one question, and the sentences it is shown.

`BookRAG.reader_inputs` builds them as `forward` sends them; the training targets and the labeled demos take theirs
from there too, so neither shows the model a prompt unlike a question's. The sentences, under the numbers the context
shows them with, tell a training target which passage number holds a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from programs.rag.context import compact_texts, format_context, numbered_context, shown_numbers
from programs.text.passage_sentences import Sentence, passage_sentences
from retrievers.passage import Passage


@dataclass(frozen=True)
class ReaderInputs:
    context: str  # the numbered passages, whole or compacted
    question: str
    history: str  # the earlier turns as the reader reads them (`format_history`)
    sentences: tuple[tuple[int, str], ...] = ()  # (shown passage number, text) of each sentence the context shows

    def fields(self) -> dict[str, str]:
        """The predictor's input fields."""
        return {"context": self.context, "question": self.question, "history": self.history}


def reader_inputs(question: str, passages: list[Passage], history: str, chosen: list[Sentence] | None = None,
                  order: Sequence[int] | None = None) -> ReaderInputs:
    """The inputs for `question` over `passages`: whole, or the `chosen` sentences alone (`CompactContext.choose`);
    best-first, or in `order` (the retrieval numbers in the order shown, renumbered from 1)."""
    shown = shown_numbers(len(passages), order)
    if chosen is None:
        context, units = format_context(passages, order), passage_sentences(passages)
    else:
        context, units = numbered_context(passages, compact_texts(chosen), order), chosen
    return ReaderInputs(context, question, history, tuple((shown[s.number], s.text) for s in units))
