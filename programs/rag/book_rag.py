"""`BookRAG`: retrieve -> gate -> generate (or extract) -> validate, as one DSPy module.

Saved state (`program.save`): the two predictors' instructions and demos, and the refusal gate's calibration;
with query expansion on (`expand="parts"` or `"hyde"`), its predictor too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from contextlib import contextmanager

import dspy
from dspy.utils.exceptions import AdapterParseError

from bookrag.config import (
    DEFAULT_SEARCH_MODE,
    DEFAULT_TOP_K,
    REFUSAL_MESSAGE,
    AnswerMode,
    ExpandMode,
    SearchMode,
    Settings,
)
from bookrag.questions import follow_up_text
from programs.lm.chat_adapter import BookChatAdapter
from programs.lm.language_model import lm_errors, lm_mode, make_lm
from programs.lm.warm_up import warm_up_lm
from programs.rag.answer_with_citations import REASONING, AnswerWithCitations, written_badly
from programs.rag.ask_api import AskAPI
from programs.rag.async_predict import apredict
from programs.rag.book_quote import book_quote, quoted
from programs.rag.bounded_question import bounded_question
from programs.rag.cited_text import cited_texts
from programs.rag.context import LOCAL_CONTEXT_WORDS, CompactContext
from programs.rag.extractive_answer import ExtractiveAnswer
from programs.rag.gate_decision import GateDecision
from programs.rag.hyde import HyDE
from programs.rag.nearest_sections import nearest_sections
from programs.rag.query_expansion import QuestionParts, interleave
from programs.rag.reader_inputs import ReaderInputs, reader_inputs
from programs.rag.refusal_prediction import refusal_prediction
from programs.rag.response import ResponseMode
from programs.rag.rewrite_query import RewriteQuery, rewritten_query
from programs.rag.selected_text import aanswer_from_selection, answer_from_selection
from programs.refusal.answer_checks import check_answer
from programs.refusal.reasons import RefusalReason
from programs.refusal.refusal_gate import RefusalGate
from programs.text.query_terms import words_found
from retrievers.passage import Passage
from retrievers.retriever import Retriever

log = logging.getLogger(__name__)
# Under this share of the question's content words in its hybrid passages, the question is in other words than the
# book's: it is searched by meaning alone (`search`).
MIN_WORDS_FOUND = 0.5


class BookRAG(AskAPI, dspy.Module):
    """Answers a question about a book from its passages, citing them, or refuses: retrieve -> gate -> generate (or
    extract) -> validate. `ask` (from `AskAPI`) wraps `forward` as a checked `Response`.

    Args:
        retriever: The book's `Retriever` (`BookIndex.retriever`): `search(query, k, module, mode)`
            returns `Passage`s. None only for a program that never searches (selected text, loading state).
        lm: The `dspy.LM` that writes answers, rewrites follow-ups and expands queries. None: answers are
            extractive whatever `answer_mode` says.
        top_k: How many passages a question retrieves and the answer reads, unless a call passes its own
            (`forward(..., top_k=)`, `ask(..., top_k=)`).
        search_mode: `hybrid` (dense and BM25 fused), `dense` or `sparse`. A hybrid search whose passages miss most of
            the question's words is done again by meaning alone (`search`).
        answer_mode: `generated` (the LM's ChainOfThought over the passages) or `extractive` (the book's own
            sentences, no LM call).
        expand: Query expansion: `none`, `parts` or `hyde` (`set_expansion`).
        context_words: The word budget of the compact context the LM reads (the passages' best sentences); 0 for
            whole passages. Defaults to `LOCAL_CONTEXT_WORDS` with the local model, 0 with a hosted one.

    Example:
        >>> program = BookRAG(index.retriever, lm=make_lm(settings))
        >>> program(question="How tall is Kestrel?").answer
        >>> program.ask("How tall is Kestrel?").citations
    """

    def __init__(self, retriever: Retriever | None = None, lm: dspy.LM | None = None, top_k: int = DEFAULT_TOP_K,
                 search_mode: SearchMode = DEFAULT_SEARCH_MODE, answer_mode: str = "generated", expand: str = "none",
                 context_words: int | None = None):
        super().__init__()
        self.rewrite = dspy.Predict(RewriteQuery)
        self.generate = dspy.ChainOfThought(AnswerWithCitations, rationale_field=dspy.OutputField(desc=REASONING))
        self.gate = RefusalGate()
        self.extract = ExtractiveAnswer()
        self.retriever, self.lm = retriever, lm
        self.top_k, self.search_mode = top_k, search_mode
        self.answer_mode = AnswerMode(answer_mode)
        # The LM reads the passages' best sentences (a small local model reads ~60-90 tokens/s), or whole passages.
        if context_words is None:
            context_words = LOCAL_CONTEXT_WORDS if lm is not None and lm_mode(lm) == "local" else 0
        self.set_context_words(context_words)
        self.set_expansion(expand)

    @classmethod
    def from_settings(cls, settings: Settings, index, lm: dspy.LM | None = None,
                      expand: str | None = None) -> BookRAG:
        """The program as configured, on `index` (a `BookIndex`): every entry point builds it here. `lm`: a ready
        LM instead of the one `settings.lm` names; `expand`: the query expansion when `settings` leave it unset
        (a compiled program's own), else none."""
        program = cls(index.retriever, lm=lm if lm is not None else make_lm(settings), top_k=settings.top_k,
                      answer_mode=settings.answer_mode, expand=settings.expand or expand or ExpandMode.NONE)
        program.index, program.manifest = index, None  # a compiled program's manifest is set by load_program
        return program

    def set_context_words(self, words: int) -> None:
        """The word budget of the compact context the LM reads (its passages' best sentences); 0: whole passages."""
        embedder = getattr(self.retriever, "embedder", None)
        self.compact = CompactContext(embedder, words) if words else None

    def set_expansion(self, expand: str) -> None:
        """Query expansion: `none`, `parts` (search for each part of a multi-part question too) or `hyde` (search
        with an LM-written hypothetical answer passage too). Why neither is the default: docs/decisions.md."""
        self.expand = ExpandMode(expand)
        # Only an expansion in use is a submodule: the saved state of `none` programs stays as it was.
        expander = {ExpandMode.NONE: None, ExpandMode.PARTS: QuestionParts, ExpandMode.HYDE: HyDE}[self.expand]
        self.expander = expander() if expander else None

    @property
    def generates(self) -> bool:
        """Whether an LM writes the answer (ChainOfThought) rather than the extractive fast mode."""
        return self.answer_mode == AnswerMode.GENERATED and self.lm is not None

    def forward(self, question: str, history=(), selected_text: str = "", module: str | None = None,
                top_k: int | None = None) -> dspy.Prediction:
        question = bounded_question(question)  # every path to an answer (ask, evaluate, optimize) comes through here
        if selected_text:
            return answer_from_selection(self, question, selected_text, format_history(history))
        decision = self.judge(question, history, top_k=top_k, module=module)
        if not decision.answerable:
            return self.refused(decision, RefusalReason.GATE)
        written = self.write_answer(question, decision.query, decision.passages, history)
        return self.checked(question, history, decision, written)

    async def aforward(self, question: str, history=(), selected_text: str = "", module: str | None = None,
                       top_k: int | None = None) -> dspy.Prediction:
        """`forward` on an event loop (`await program.acall(question=...)`): the LM is awaited (`apredict`: DSPy's
        async path, or a worker thread for an engine without one, as the local model's). The search and the gate
        run in a worker thread: they may wait on the network (Cohere's embeddings, a Qdrant server, a hosted LM's
        follow-up rewrite or query expansion), and the local embedder holds the CPU for tens of milliseconds. The
        checks run on the loop: a few milliseconds of string matching."""
        question = bounded_question(question)
        if selected_text:
            return await aanswer_from_selection(self, question, selected_text, format_history(history))
        decision = await asyncio.to_thread(self.judge, question, history, top_k, module)
        if not decision.answerable:
            return self.refused(decision, RefusalReason.GATE)
        written = await self.awrite_answer(question, decision.query, decision.passages, history)
        return self.checked(question, history, decision, written)

    def judge(self, question: str, history=(), top_k: int | None = None, module: str | None = None) -> GateDecision:
        """The refusal gate's decision on the question's evidence (`evidence`: its query and passages)."""
        started = time.perf_counter()
        query, passages = self.evidence(question, history, top_k=top_k, module=module)
        retrieved = time.perf_counter()
        answerable, probability, features = self.gate(query, passages)
        gate = {"probability": round(probability, 4), "threshold": self.gate.threshold, "answerable": answerable,
                "off_topic_below": self.gate.off_topic_below, "calibrated": self.gate.calibrated}
        return GateDecision(query, passages, answerable, probability, self.gate.about_the_book(probability, features),
                            gate, (retrieved - started) * 1000, retrieved)

    def checked(self, question: str, history, decision: GateDecision, written) -> dspy.Prediction:
        """The written answer (`write_answer`) if it passes the answer checks, else the refusal they give. An LM reply
        that is no answer (`written` None) is refused too, with the nearest sections."""
        timing = {"retrieval_time_ms": decision.retrieval_time_ms,
                  "generation_time_ms": (time.perf_counter() - decision.retrieved_at) * 1000}
        if written is None:
            return self.refused(decision, RefusalReason.UNREADABLE_REPLY, timing)
        answer, citations, verdict, mode = written
        checked = check_answer(question, answer, citations, decision.passages, history=history, answerable=verdict,
                               generated=mode == ResponseMode.GENERATED)
        if not checked.passed:
            return self.refused(decision, checked.refusal, timing)
        confidence = "high" if decision.probability >= self.gate.high_confidence else "low"
        return dspy.Prediction(answer=answer, citations=checked.citations, passages=decision.passages,
                               cited_texts=cited_texts(answer, decision.query, decision.passages, checked.citations),
                               is_refusal=False, refusal_reason=None, confidence=confidence, mode=mode,
                               query=decision.query, gate=decision.gate, **timing)

    def refused(self, decision: GateDecision, reason: RefusalReason, timing: dict | None = None) -> dspy.Prediction:
        """The refusal; of a question about the book (the gate's, or the LM's or a check's after the gate let it
        through), with its nearest sections: where the reader would look next."""
        timing = timing or {"retrieval_time_ms": decision.retrieval_time_ms}
        nearest = nearest_sections(decision.passages) if decision.about_the_book else []
        return refusal_prediction(REFUSAL_MESSAGE, reason, decision.query, decision.passages, decision.gate, timing,
                                  nearest)

    def write_answer(self, question: str, query: str, passages: list[Passage], history=()):
        """(answer, valid citations, answerable verdict, mode): the LM's ChainOfThought, or the extractive mode. A
        reply that is no answer (the adapter cannot read it, the context copied out, a phrase repeated to the token
        cap) gives way to one sentence of the book that answers on its own, shown as a quote (`book_quote`), or,
        without one, to a refusal (None)."""
        reply = self.read(self.reader_inputs(question, query, passages, history)) if self.generates else None
        return self.answer_of(reply, query, passages)

    async def awrite_answer(self, question: str, query: str, passages: list[Passage], history=()):
        """`write_answer` on an event loop."""
        if not self.generates:
            return self.answer_of(None, query, passages)
        # the compact context embeds sentences: off the loop
        inputs = await asyncio.to_thread(self.reader_inputs, question, query, passages, history)
        return self.answer_of(await self.aread(inputs), query, passages)

    def reader_inputs(self, question: str, query: str, passages: list[Passage], history=(),
                      order: Sequence[int] | None = None) -> ReaderInputs:
        """What the reader reads for `question`, as `forward` sends it: the numbered passages (compacted to their
        best sentences for `query` when `self.compact`), the question and the earlier turns. `order` shows the
        passages in another order, renumbered (a training prompt's); `forward` shows them best-first."""
        chosen = self.compact.choose(query, passages) if self.compact else None
        return reader_inputs(question, passages, format_history(history), chosen, order)

    def read(self, inputs: ReaderInputs) -> dspy.Prediction | None:
        """One reading of `inputs` by the program's LM (its ChainOfThought); None when the adapter cannot read the
        reply."""
        try:
            with self._lm(parse_errors=False):
                return self.generate(**inputs.fields())
        except AdapterParseError:
            return None

    async def aread(self, inputs: ReaderInputs) -> dspy.Prediction | None:
        """`read`, awaited (`apredict`)."""
        try:
            with self._lm(parse_errors=False):
                return await apredict(self.generate, **inputs.fields())
        except AdapterParseError:
            return None

    def answer_of(self, reply: dspy.Prediction | None, query: str, passages: list[Passage]):
        """`write_answer`'s tuple from the LM's reply (None for a reply that is no answer), or the extractive mode's
        from the book's sentences."""
        if not self.generates:
            extract = self.extract(query, passages)
            return extract.answer, extract.citations, bool(extract.answer), ResponseMode.EXTRACTIVE
        if reply is None or written_badly(reply.answer):
            quote = book_quote(query, passages)
            log.warning("the LM's reply could not be read as an answer; %s", "quoting the book" if quote else "refusing")
            return (quoted(quote.text), [quote.number], True, ResponseMode.QUOTED) if quote else None
        return (reply.answer, valid_citations(reply.citations, len(passages)), bool(reply.answerable),
                ResponseMode.GENERATED)

    def warm_up(self) -> None:
        """Load the LM and read the fixed part of the answer prompt (instructions and compiled demos) into its
        prompt cache, so the first question costs no more than the others. A one-token call, never cached."""
        if not self.generates:
            return
        warm_up_lm(self.lm, self.generate.predict, {"context": "[1] -\n-", "question": "-", "history": ""})

    def evidence(self, question: str, history=(), top_k: int | None = None,
                      module: str | None = None) -> tuple[str, list[Passage]]:
        """(the standalone query, its passages): what the refusal gate judges. The answer path, the gate's
        calibration and the bootstrap's choice of traceable questions all take it from here."""
        query = self.standalone_query(question, history)
        return query, self.retrieve(query, k=self.top_k if top_k is None else top_k, module=module)

    def retrieve(self, query: str, k: int, module: str | None = None) -> list[Passage]:
        """The top k passages; with query expansion on, a search for each expanded query, interleaved."""
        if self.expander is None:
            return self.search(query, k, module)
        with self._lm():
            queries = self.expander(question=query)
        log.debug("expanded %r into %r", query, queries)
        return interleave([self.search(q, k, module) for q in queries], k)

    def search(self, query: str, k: int, module: str | None = None) -> list[Passage]:
        """The retriever's top k in the program's search mode. A hybrid search whose passages hold under half of the
        question's content words is done again by meaning alone: a question in other words than the book's shares
        only a few words with it, and BM25's hits on those push the answering passages out (key facts in the
        passages, train+dev: paraphrases 7 of 21 -> 14 of 21, none of another style lost;
        benchmarks/search_by_meaning.py)."""
        passages = self.retriever.search(query, k=k, module=module, mode=self.search_mode)
        if self.search_mode == "hybrid" and misses_the_words(query, passages):
            return self.retriever.search(query, k=k, module=module, mode="dense")
        return passages

    def standalone_query(self, question: str, history) -> str:
        """A follow-up rewritten to stand alone: by the compiled predictor with a hosted LM, else by reading it with
        the previous turn, its answer included (`follow_up_text`). Locally a second prompt would evict the
        answerer's cached prompt prefix (system message and demos) from llama.cpp's KV cache, and re-reading that
        costs more than the rewrite gains."""
        if not history:
            return question
        if self.generates and lm_mode(self.lm) == "hosted":
            with self._lm(parse_errors=False):
                rewritten = rewritten_query(self.rewrite, format_history(history), question)
            if rewritten:
                return rewritten
        return follow_up_text(question, history)

    @contextmanager
    def _lm(self, parse_errors: bool = True):
        """The program's LM and adapter for this call only (dspy.context is per-thread; dspy.configure is not).
        `parse_errors=False` lets an unreadable reply through as AdapterParseError, for a caller that falls back."""
        # lm_errors is entered inside the context, so a failure names self.lm.
        lm = {"lm": self.lm} if self.lm is not None else {}
        with dspy.context(adapter=BookChatAdapter(), **lm), lm_errors(parse_errors=parse_errors):
            yield


def misses_the_words(query: str, passages: list[Passage]) -> bool:
    """Whether the passages hold under `MIN_WORDS_FOUND` of the query's content words: a question in other words than
    the book's, which `BookRAG.search` searches again by meaning."""
    return words_found(query, [p.text for p in passages]) < MIN_WORDS_FOUND


def format_history(history) -> str:
    """Earlier turns as data, not as chat roles: under `User:`/`Assistant:` labels the local model answered a
    follow-up with the earlier turn's answer (5 of 13 dev follow-ups were right only after the change)."""
    return "\n".join(f"Earlier question: {t['question']}\nEarlier answer: {t.get('answer', '')}" for t in history or ())


def valid_citations(citations, n_passages: int) -> list[int]:
    """Passage numbers that name a retrieved passage; anything else (hallucinated, malformed) is dropped."""
    valid = []
    for c in citations or []:
        try:
            number = int(c)
        except (TypeError, ValueError):
            continue
        if 1 <= number <= n_passages and number not in valid:
            valid.append(number)
    return valid
