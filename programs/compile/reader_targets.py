"""What the trained reader should write for each training question, as RAFT trains a reader (Zhang et al., 2024).

- The prompt is the program's own (`BookRAG.reader_inputs`: the context it retrieves and compacts, the question, the
  history), its passage blocks shown in a seeded order and renumbered, not best-first: the passage that holds the
  first key fact lands on each number about equally often. The reader trained on best-first prompts learned that the
  answer sits in passage 1 and cited [1] alone in 89 of 92 dev replies (docs/results.md, 2026-11-28).
- A question whose context holds every key fact is taught, in this order of preference:
  - "own": the base reader's reply to that prompt, when it states every fact, cites a passage that holds one (and
    names no other), reads as an answer and is short (DSPy's BootstrapFinetune keeps the traces its metric passes);
  - "own answer": that reply's answer when only its pointing is wrong, behind one line quoting the deciding words
    with the number of the passage that holds them (`Passage 2 states "..."`): shown the fact in another passage
    than the first, the base reader often names the wrong one;
  - "hinted" and "hinted answer": the same from its reply when the reference answer is given as a hint after the
    question, taught without the hint (STaR's rationalization);
  - "reference": the reference answer behind the line quoting the deciding words.
- "distractors": one such question in five is taught the refusal instead, with every passage that holds one of its
  facts replaced by the next retrieved ones (RAFT's share without the gold document): the passages, not the book,
  decide what can be answered.
- "refusal" (a must-refuse question) and "missing" (an answerable one whose context holds none of its facts): the
  refusal.
- An answerable question whose context holds only some of its facts is left out: neither a full answer nor a refusal
  is right for it. So is one without key facts or a reference answer: there is nothing to check a reply against.

`plan_target` decides a question's prompt and kind without the LM, so that a limited run chooses its examples
(`choose_targets`) before asking for any reply; `reader_target` then writes the reply, from the reply file where it is
saved (`ReplyFile`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from bookrag.config import REFUSAL_MESSAGE
from bookrag.progress import progress_bar
from bookrag.questions import Question
from programs.compile.example_choice import REFUSAL_SOURCES
from programs.compile.reader_replies import ReplyFile, reply_key
from programs.evaluate.metrics import fact_present
from programs.rag.answer_with_citations import written_badly
from programs.rag.book_rag import valid_citations
from programs.rag.reader_inputs import ReaderInputs

QUOTE_WORDS = 10  # the deciding words quoted in a reference target's reasoning, around the key fact
MAX_ANSWER_WORDS = 40  # a reply longer than this teaches length: the next source is used instead
DISTRACTOR_SHARE = 0.2  # of the questions whose context holds every fact: taught to refuse without those passages
NO_PASSAGE = "No passage states it."
_PASSAGE_NUMBER = re.compile(r"\[(\d+)\]|\bpassages? (\d+)", re.IGNORECASE)  # a passage a reasoning names


@dataclass(frozen=True)
class TargetPlan:
    question: Question
    inputs: ReaderInputs  # the prompt, its passages in `order`
    order: tuple[int, ...]  # the retrieval numbers in the order shown
    source: str  # "answer" (its reply is still to be written) or one of REFUSAL_SOURCES
    fact_passage: tuple[int, int] | None = None  # (best-first, shown) number of the passage with the first key fact

    @property
    def id(self) -> str:
        return self.question.id

    @property
    def style(self) -> str:
        return self.question.style


@dataclass(frozen=True)
class ReaderTarget:
    id: str
    inputs: dict  # context, question, history: the answer prompt's inputs
    outputs: dict  # reasoning, answer, citations, answerable: the reply to learn
    source: str  # "own", "own answer", "hinted", "hinted answer", "reference", or one of REFUSAL_SOURCES
    style: str = ""
    fact_passage: tuple[int, int] | None = None


def plan_targets(program, questions: list[Question], book: str, seed: int,
                 progress: bool | None = None) -> list[TargetPlan]:
    """The plan of each usable question of `book` (selected-text questions and partly held facts are left out)."""
    plans = []
    with progress_bar(f"Training prompts of {book} (retrieval)", len(questions), progress) as bar:
        for q in questions:
            if (plan := plan_target(program, q, book, seed)) is not None:
                plans.append(plan)
            bar.advance()
    return plans


def plan_target(program, q: Question, book: str, seed: int) -> TargetPlan | None:
    if q.selected_text or (q.answerable and not (q.key_facts and q.reference_answer)):
        return None
    rng = random.Random(f"{seed}:{book}:{q.id}")  # the question's own: adding questions moves no other prompt
    query, passages = program.evidence(q.question, q.history)
    best_first = program.reader_inputs(q.question, query, passages, q.history)
    held = [f for f in q.key_facts if any(fact_present(f, text) for _, text in best_first.sentences)]
    if not q.answerable or not held:
        order = shuffled(len(passages), rng)
        inputs = program.reader_inputs(q.question, query, passages, q.history, order)
        return TargetPlan(q, inputs, order, "missing" if q.answerable else "refusal")
    if len(held) < len(q.key_facts):
        return None
    if rng.random() < DISTRACTOR_SHARE and (plan := distractor_plan(program, q, query, len(passages), rng)):
        return plan
    first = next(n for n, text in best_first.sentences if fact_present(q.key_facts[0], text))
    place = rng.randint(1, len(passages))
    others = [n for n in shuffled(len(passages), rng) if n != first]
    order = (*others[:place - 1], first, *others[place - 1:])
    inputs = program.reader_inputs(q.question, query, passages, q.history, order)
    return TargetPlan(q, inputs, order, "answer", (first, place))


def distractor_plan(program, q: Question, query: str, k: int, rng: random.Random) -> TargetPlan | None:
    """The refusal, taught on the next `k` retrieved passages that hold none of `q`'s facts; None when the facts
    are in every passage the context would show."""
    _, wider = program.evidence(q.question, q.history, top_k=2 * k)
    rest = [p for p in wider if not any(fact_present(f, p.text) for f in q.key_facts)][:k]
    order = shuffled(len(rest), rng)
    inputs = program.reader_inputs(q.question, query, rest, q.history, order)
    if not rest or any(fact_present(f, text) for f in q.key_facts for _, text in inputs.sentences):
        return None
    return TargetPlan(q, inputs, order, "distractors")


def shuffled(count: int, rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.sample(range(1, count + 1), count))


def reader_targets(program, plans: list[TargetPlan], book: str, replies: ReplyFile | None,
                   progress: bool | None = None) -> list[ReaderTarget]:
    """The target of each plan; the answers' replies from `replies` (asked for where it has none), or reference
    targets alone when `replies` is None."""
    with progress_bar(f"Training replies of {book} (the reader's own)", len(plans), progress) as bar:
        targets = []
        for plan in plans:
            targets.append(reader_target(program, plan, book, replies))
            bar.advance()
    return targets


def reader_target(program, plan: TargetPlan, book: str, replies: ReplyFile | None) -> ReaderTarget:
    q = plan.question
    target = ReaderTarget(q.id, plan.inputs.fields(), refusal(), plan.source, q.style, plan.fact_passage)
    if plan.source in REFUSAL_SOURCES:
        return target
    if replies is not None:
        for source, inputs in (("own", plan.inputs), ("hinted", hinted(plan.inputs, q))):
            reply = replies.reply(program, reply_key(book, q.id, plan.order, source == "hinted"), inputs)
            if (taught := reply_target(reply, q, plan.inputs, len(plan.order))) is not None:
                outputs, whole = taught
                return replace(target, outputs=outputs, source=source if whole else f"{source} answer")
    return replace(target, outputs=reference_reply(q, plan.inputs.sentences), source="reference")


def hinted(inputs: ReaderInputs, q: Question) -> ReaderInputs:
    """The prompt with the reference answer after the question, as a hint."""
    hint = f'{q.question}\n(Hint: the answer is "{q.reference_answer}". Say which passage states it.)'
    return replace(inputs, question=hint)


def reply_target(reply: dict | None, q: Question, inputs: ReaderInputs, n_passages: int) -> tuple[dict, bool] | None:
    """(outputs, whole) to teach from `reply`, or None when its answer misses a key fact, is long, reads as no answer
    or mentions a hint. Whole when it also cites a shown passage that holds a fact and its reasoning names no other;
    else its answer alone, behind the reasoning quoting the passages that hold the facts (the base reader, shown the
    fact in another passage than the first, often names the wrong one)."""
    if reply is None or not reply["answerable"]:
        return None
    answer, reasoning = reply["answer"].strip(), reply["reasoning"].strip()
    if (not all(fact_present(f, answer) for f in q.key_facts) or written_badly(answer)
            or len(answer.split()) > MAX_ANSWER_WORDS or "hint" in f"{reasoning} {answer}".lower()):
        return None
    shown = {n for n, _ in inputs.sentences}
    citations = [n for n in valid_citations(reply["citations"], n_passages) if n in shown]
    holding = {n for n, text in inputs.sentences if any(fact_present(f, text) for f in q.key_facts)}
    named = {int(bracketed or written) for bracketed, written in _PASSAGE_NUMBER.findall(reasoning)}
    if holding & set(citations) and named <= holding:
        return {"reasoning": reasoning, "answer": answer, "citations": citations, "answerable": True}, True
    return {**reference_reply(q, inputs.sentences), "answer": answer}, False


def reference_reply(q: Question, units) -> dict:
    """The reference answer, citing the passages that hold the key facts, behind one line quoting them."""
    quotes = [quote(f, units) for f in q.key_facts]
    reasoning = "; ".join(dict.fromkeys(f'passage {n} states "{words}"' for n, words in quotes))
    reasoning = reasoning[0].upper() + reasoning[1:] + "."
    return {"reasoning": reasoning, "answer": q.reference_answer, "citations": sorted({n for n, _ in quotes}),
            "answerable": True}


def refusal() -> dict:
    return {"reasoning": NO_PASSAGE, "answer": REFUSAL_MESSAGE, "citations": [], "answerable": False}


def quote(fact, units) -> tuple[int, str]:
    """(passage number, up to QUOTE_WORDS words around `fact`) from the first unit that holds it."""
    number, text = next((n, t) for n, t in units if fact_present(fact, t))
    words = text.split()
    for size in range(QUOTE_WORDS, len(words) + 1):
        for start in range(len(words) - size + 1):
            window = " ".join(words[start:start + size])
            if fact_present(fact, window):
                return number, window.strip(" ,;:")
    return number, text
