"""Metrics over labeled questions: retrieval (recall@k, MRR), answers (key facts), refusals, citations.

The per-question functions take `example` (a `dspy.Example` from `Question.to_example()`) and `pred` (the
`dspy.Prediction` of `BookRAG.forward`), so the same code scores the evaluation report and compiles the program
(`combined_score` for DSPy optimizers, `feedback_score` for GEPA).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import dspy

from programs.refusal.reasons import MODEL_REFUSALS
from retrievers.passage import Passage

# combined_score at or above this makes a bootstrapped trace a demo: every key fact (0.4), a valid gold citation
# (0.2) and a token F1 of at least 0.4 against the reference (0.16), i.e. correct, cited and concise.
BOOTSTRAP_PASS = 0.75

_NUMBER_UNIT = re.compile(r"(\d)\s+(?=[a-z%°])")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower case, unified unicode, collapsed whitespace, and no space between a number and its unit."""
    text = unicodedata.normalize("NFKC", text).lower().replace("‑", "-").replace("–", "-")
    text = _SPACE.sub(" ", text).strip()
    return _NUMBER_UNIT.sub(r"\1", text)


def fact_present(fact: str | tuple[str, ...], answer: str) -> bool:
    """Whether one key fact occurs in the answer: case-, whitespace- and number/unit-spacing-insensitive. A fact
    given as alternatives (`("1.2 m", "1.2 meters")`) is present when any one of them is."""
    alternatives = (fact,) if isinstance(fact, str) else fact
    text = normalize(answer)
    return any(normalize(alternative) in text for alternative in alternatives)


def fact_text(fact: str | tuple[str, ...]) -> str:
    """A key fact as a person reads it: its alternatives joined by " / "."""
    return fact if isinstance(fact, str) else " / ".join(fact)


def key_fact_recall(key_facts, answer: str) -> float:
    if not key_facts:
        return 1.0
    return sum(fact_present(f, answer) for f in key_facts) / len(key_facts)


_TOKEN = re.compile(r"\w+(?:[.\-]\w+)*")
_ARTICLES = frozenset(("a", "an", "the"))


def answer_tokens(text: str) -> list[str]:
    """Lower-cased words for token F1: `1.2`, `best-effort` and `rmw_cyclonedds_cpp` stay whole; articles and
    punctuation go (as in SQuAD's F1, without splitting numbers and names at their punctuation)."""
    return [t for t in _TOKEN.findall(normalize(text)) if t not in _ARTICLES]


def token_f1(reference: str, answer: str) -> float:
    """Token-level F1 of the answer against the reference answer: rewards stating the fact, penalizes burying it
    in unrelated text. 0.0 when either is empty."""
    ref, ans = answer_tokens(reference), answer_tokens(answer)
    common = sum((Counter(ref) & Counter(ans)).values())
    if not common:
        return 0.0
    precision, recall = common / len(ans), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def answer_words(answer: str) -> int:
    return len(answer.split())


def first_gold_rank(passages: list[Passage], gold_sources) -> int | None:
    """1-based rank of the first passage from a gold source, or None."""
    gold = set(gold_sources)
    return next((rank for rank, p in enumerate(passages, start=1) if p.source in gold), None)


def recall_at_k(passages: list[Passage], gold_sources, k: int) -> float:
    rank = first_gold_rank(passages[:k], gold_sources)
    return 1.0 if rank is not None else 0.0


def reciprocal_rank(passages: list[Passage], gold_sources) -> float:
    rank = first_gold_rank(passages, gold_sources)
    return 1.0 / rank if rank else 0.0


# -- answers and refusals ----------------------------------------------------------------------------------


def answer_correct(example, pred) -> bool:
    """An answerable question, answered (not refused), with every key fact in the answer."""
    return bool(example.answerable and not pred.is_refusal and key_fact_recall(example.key_facts, pred.answer) == 1.0)


def refusal_correct(example, pred) -> bool:
    """Must-refuse refused, answerable not refused."""
    return bool(pred.is_refusal) != bool(example.answerable)


def passed(example, pred) -> bool:
    """The verdict of one question: answered correctly if answerable, refused if not."""
    return answer_correct(example, pred) if example.answerable else refusal_correct(example, pred)


# -- citations ---------------------------------------------------------------------------------------------


def cited_numbers(pred) -> list[int]:
    """The distinct passage numbers the prediction cites, in order (1-based)."""
    numbers = []
    for n in pred.citations or ():
        if n not in numbers:
            numbers.append(n)
    return numbers


def cited_sources(pred) -> list[str]:
    """The page paths of the cited passages that were retrieved."""
    passages = pred.passages or []
    return [passages[n - 1].source for n in cited_numbers(pred) if _names_passage(n, passages)]


def citation_validity(pred) -> float:
    """Share of cited passage numbers that name a passage read (retrieved, or the selection of a selected-text
    answer, which cites it). Nothing cited counts as 1.0: nothing invalid was cited."""
    numbers, passages = cited_numbers(pred), pred.passages or []
    if not numbers or not passages:
        return 1.0
    return sum(_names_passage(n, passages) for n in numbers) / len(numbers)


def citation_precision(example, pred) -> float:
    """Share of cited passages that come from a gold source (an unretrieved number counts as wrong).
    Nothing cited: 1.0 when nothing was to be cited (no gold sources), else 0.0."""
    numbers, gold = cited_numbers(pred), set(example.gold_sources)
    if not numbers:
        return 0.0 if gold else 1.0
    return sum(source in gold for source in cited_sources(pred)) / len(numbers)


def citation_recall(example, pred) -> float:
    """Share of gold sources cited by at least one passage; 1.0 when the example has no gold sources."""
    gold = set(example.gold_sources)
    if not gold:
        return 1.0
    return len(gold & set(cited_sources(pred))) / len(gold)


def cited_words(pred) -> list[str | None]:
    """The words each citation quotes from its passage (`programs/rag/cited_text.py`), None where it quotes none."""
    return [cited.cited_text if cited is not None else None for cited in pred.cited_texts]


def cited_text_support(example, pred) -> bool:
    """Whether the citations' cited texts together hold every key fact: the reader finds the answer in the words
    shown under its sources, without opening the book."""
    return key_fact_recall(example.key_facts, " ".join(filter(None, cited_words(pred)))) == 1.0


def gold_citation_applies(example) -> bool:
    """Whether citing a gold source can be asked of this question: it has gold sources and goes through
    retrieval (a selected-text answer cites no page, by design)."""
    return bool(example.gold_sources) and not example.selected_text


def gold_source_cited(example, pred) -> bool:
    return bool(set(example.gold_sources) & set(cited_sources(pred)))


# -- the compile metrics -----------------------------------------------------------------------------------


def combined_score(example, pred, trace=None) -> float | bool:
    """One number in 0..1 per question, the metric optimize.py compiles with.

    Must refuse: 1.0 if refused, else 0.0. Answerable: 0.0 if refused, else 0.4 x key-fact recall + 0.4 x token F1
    against the reference answer (key-fact recall again when there is none) + 0.1 x citation validity + 0.1 x (a
    gold source cited; 1.0 when there is none to cite). Key facts reward being right, F1 rewards saying it concisely: a fact buried in unrelated text scores
    below the fact stated. When DSPy bootstraps demos (`trace` is not None) it returns a bool instead:
    score >= BOOTSTRAP_PASS, so only correct, cited and concise answers become demos.
    """
    score = _score(example, pred)
    if trace is None:
        return score
    if not example.answerable:
        # A trace demonstrates a refusal only when the model itself refused (or the gate did, and nothing ran): a
        # wrong answer that a later check turned into a refusal must not become a demo of answering.
        return bool(pred.is_refusal) and pred.refusal_reason in MODEL_REFUSALS
    return score >= BOOTSTRAP_PASS


def feedback_score(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    """GEPA's metric: `combined_score` with a sentence per thing that went wrong, for its reflection LM."""
    problems = []
    if not gold.answerable:
        if not pred.is_refusal:
            problems.append("Answered a must-refuse question: the book does not cover it, so the program should "
                            "have refused.")
    elif pred.is_refusal:
        problems.append("Refused an answerable question: the book covers it"
                        + (f" in {', '.join(gold.gold_sources)}." if gold.gold_sources else "."))
    else:
        missing = [fact_text(fact) for fact in gold.key_facts if not fact_present(fact, pred.answer)]
        if missing:
            problems.append(f"The answer misses these key facts: {'; '.join(missing)}.")
        invalid = [n for n in cited_numbers(pred) if not _names_passage(n, pred.passages or [])]
        if invalid and pred.passages:
            problems.append(f"Cited passage(s) {', '.join(map(str, invalid))}, which were not retrieved.")
        if gold_citation_applies(gold) and not gold_source_cited(gold, pred):
            problems.append(f"Did not cite a gold source ({', '.join(gold.gold_sources)}).")
        if gold.reference_answer and answer_words(pred.answer) > 2 * answer_words(gold.reference_answer) + 10:
            problems.append(f"The answer is {answer_words(pred.answer)} words; the reference says it in "
                            f"{answer_words(gold.reference_answer)}: state the fact, leave out the rest.")
    feedback = " ".join(problems) or "Correct: " + ("refused as it should." if not gold.answerable else
                                                     "all key facts present, with valid gold citations.")
    return dspy.Prediction(score=_score(gold, pred), feedback=feedback)


def semantic_f1(example, pred, judge: dspy.LM) -> float:
    """LM-judged semantic F1 of the answer against the reference answer (dspy.evaluate.SemanticF1). Needs a
    capable hosted judge; a small local model is not a trustworthy one."""
    from dspy.evaluate import SemanticF1

    from programs.lm.language_model import lm_mode

    if lm_mode(judge) != "hosted":
        raise ValueError(f"semantic F1 needs a hosted judge LM, not {judge.model}")
    with dspy.context(lm=judge):
        result = SemanticF1()(dspy.Example(question=example.question, response=example.reference_answer),
                              dspy.Prediction(response=pred.answer))
    return float(result.score)


def _score(example, pred) -> float:
    if not example.answerable:
        return 1.0 if pred.is_refusal else 0.0
    if pred.is_refusal:
        return 0.0
    gold_cited = gold_source_cited(example, pred) if gold_citation_applies(example) else True
    facts = key_fact_recall(example.key_facts, pred.answer)
    f1 = token_f1(example.reference_answer, pred.answer) if example.reference_answer else facts  # no reference
    return 0.4 * facts + 0.4 * f1 + 0.1 * citation_validity(pred) + 0.1 * float(gold_cited)


def _names_passage(number, passages) -> bool:
    return isinstance(number, int) and 1 <= number <= len(passages)
