"""What the trained reader should write for each training question: the program's own prompt inputs (the context it
retrieves and compacts, the question, the history) and a short reply.

- A question whose context holds every key fact: the program's own reply when it states every fact, cites a passage
  that holds one and is short (bootstrapped, as DSPy's BootstrapFinetune keeps the traces its metric passes), else the
  reference answer. Either way the reasoning is one line that quotes the deciding words with their passage number
  (`Passage 2 states "..."`: not `[2] "..."`, a shape the reader trained on it copied into its answers).
- A must-refuse question, or an answerable one whose context holds none of its key facts: the refusal, with
  `answerable` False (the passages, not the book, decide what can be answered).
- An answerable question whose context holds some of its facts is left out: neither a full answer nor a refusal
  is right for it. So is one without key facts or a reference answer: there is nothing to quote or to write.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bookrag.config import REFUSAL_MESSAGE
from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.evaluate.metrics import fact_present
from programs.rag.answer_with_citations import written_badly
from programs.rag.book_rag import valid_citations
from programs.rag.reader_inputs import ReaderInputs

QUOTE_WORDS = 10  # the deciding words quoted in the reasoning, around the key fact
MAX_ANSWER_WORDS = 40  # a bootstrapped answer longer than this teaches length: the reference answer is used instead
NO_PASSAGE = "No passage states it."


@dataclass(frozen=True)
class ReaderTarget:
    id: str
    inputs: dict  # context, question, history: the answer prompt's inputs
    outputs: dict  # reasoning, answer, citations, answerable: the reply to learn
    source: str  # "bootstrapped", "reference", "refusal" (must-refuse) or "missing" (the context lacks the facts)
    style: str = ""
    extra: dict = field(default_factory=dict)


def reader_targets(program, questions: list[Question], bootstrap: bool,
                   progress: bool | None = None) -> list[ReaderTarget]:
    """One target per usable question (selected-text questions and partly answerable contexts are left out)."""
    targets = []
    with progress_bar("Training targets (retrieval and the program's replies)", len(questions), progress) as bar:
        for q in questions:
            if not q.selected_text and (target := reader_target(program, q, bootstrap)) is not None:
                targets.append(target)
            bar.advance()
    return targets


def reader_target(program, q: Question, bootstrap: bool) -> ReaderTarget | None:
    if q.answerable and not (q.key_facts and q.reference_answer):
        return None
    query, passages = program.evidence(q.question, q.history)
    inputs = program.reader_inputs(q.question, query, passages, q.history)
    reply = answer_reply(program, inputs, q, len(passages), bootstrap)
    return ReaderTarget(q.id, inputs.fields(), *reply, q.style) if reply is not None else None


def answer_reply(program, inputs: ReaderInputs, q: Question, n_passages: int, bootstrap: bool):
    """(outputs, source) for `q` reading `inputs`, or None when the context holds only some of its key facts."""
    units = inputs.sentences
    held = [f for f in q.key_facts if any(fact_present(f, text) for _, text in units)]
    if not q.answerable or not held:
        return refusal(), "refusal" if not q.answerable else "missing"
    if len(held) < len(q.key_facts):
        return None
    quotes = [quote(f, units) for f in q.key_facts]
    reasoning = "; ".join(dict.fromkeys(f'passage {n} states "{words}"' for n, words in quotes))
    reasoning = reasoning[0].upper() + reasoning[1:] + "."
    if bootstrap and (own := bootstrapped_answer(program, inputs, q, units, n_passages)) is not None:
        answer, citations = own
        return {"reasoning": reasoning, "answer": answer, "citations": citations, "answerable": True}, "bootstrapped"
    holding = sorted({n for n, _ in quotes})
    return ({"reasoning": reasoning, "answer": q.reference_answer, "citations": holding, "answerable": True},
            "reference")


def refusal() -> dict:
    return {"reasoning": NO_PASSAGE, "answer": REFUSAL_MESSAGE, "citations": [], "answerable": False}


def quote(fact, units: list[tuple[int, str]]) -> tuple[int, str]:
    """(passage number, up to QUOTE_WORDS words around `fact`) from the first unit that holds it."""
    number, text = next((n, t) for n, t in units if fact_present(fact, t))
    words = text.split()
    for size in range(QUOTE_WORDS, len(words) + 1):
        for start in range(len(words) - size + 1):
            window = " ".join(words[start:start + size])
            if fact_present(fact, window):
                return number, window.strip(" ,;:")
    return number, text


def bootstrapped_answer(program, inputs: ReaderInputs, q: Question, units,
                        n_passages: int) -> tuple[str, list[int]] | None:
    """The program's own (answer, citations) when it states every key fact, cites a passage holding one, reads as an
    answer and is short; else None."""
    if (pred := program.read(inputs)) is None:
        return None
    answer = (pred.answer or "").strip()
    citations = valid_citations(pred.citations, n_passages)
    holding = {n for n, text in units if any(fact_present(f, text) for f in q.key_facts)}
    right = all(fact_present(f, answer) for f in q.key_facts) and bool(pred.answerable)
    if right and holding & set(citations) and not written_badly(answer) and len(answer.split()) <= MAX_ANSWER_WORDS:
        return answer, citations
    return None
