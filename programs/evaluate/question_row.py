"""`QuestionRow`: one labeled question through a program, with its prediction and every per-question metric.

The defaults are the row of a question the program failed on (an LM timeout, an error reply): no answer, every
check failed, so one bad call is counted and shown instead of losing the whole evaluation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from bookrag.questions import Question


@dataclass
class QuestionRow:
    id: str
    category: str
    style: str  # how the question is phrased (bookrag/questions.py STYLES); empty for must-refuse, selected text
    question: str
    answerable: bool
    gold_sources: list[str]
    latency_ms: float = 0.0
    refused: bool = False
    refusal_reason: str | None = None
    mode: str = "error"
    answer: str = ""
    cited_numbers: list[int] = field(default_factory=list)  # the cited passages' numbers as the reader saw them
    cited_sources: list[str] = field(default_factory=list)
    cited_text: list[str | None] = field(default_factory=list)  # each citation's cited text, None where it has none
    gate_probability: float | None = None
    gate_threshold: float | None = None
    top_dense: float | None = None  # best cosine of the retrieved passages (None: nothing retrieved)
    key_fact_recall: float | None = None  # answerable questions only
    answer_correct: bool = False
    refusal_correct: bool = False
    citation_validity: float = 1.0
    citation_precision: float = 0.0
    citation_recall: float = 0.0
    cited_text_support: bool | None = None  # every key fact in the cited texts; answered questions with key facts
    gold_cited: bool | None = None  # asked of answered questions with a gold source only
    gold_retrieved: bool | None = None  # asked of questions that go through retrieval only
    token_f1: float | None = None  # answerable questions with a reference answer only
    answer_words: int | None = None  # answered answerable questions only
    parse_failed: bool = False
    lm_answered: bool = False  # the LM wrote an answer (refusals after the LM included)
    combined: float = 0.0
    passed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    semantic_f1: float | None = None  # only with an LM judge
    error: str | None = None

    @classmethod
    def of(cls, question: Question, **fields) -> QuestionRow:
        """The row of `question`, its identity taken from it, with `fields` set."""
        return cls(id=question.id, category=question.category or "uncategorized", style=question.style,
                   question=question.question,
                   answerable=question.answerable, gold_sources=list(question.gold_sources), **fields)

    @classmethod
    def failed(cls, question: Question, error: str, latency_ms: float) -> QuestionRow:
        """The row of a question the program failed on: scored as failed, the error kept."""
        return cls.of(question, latency_ms=round(latency_ms, 2), error=error,
                      key_fact_recall=0.0 if question.answerable else None,
                      token_f1=0.0 if question.answerable and question.reference_answer else None)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def answered(self) -> bool:
        """An answer reached the user: not refused, no error."""
        return not self.refused and self.error is None

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens": self.tokens}

