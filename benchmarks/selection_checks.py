"""What the answer checks would do to selected-text answers, on the labeled books' selected-text questions.

    python benchmarks/selection_checks.py [--splits train dev]

In selected-text mode the selection is the only passage. The local model answers each selected-text question
zero-shot with no check after it (DSPy's cache makes a rerun cheap); then, for each answer, this prints whether it
is right (every key fact) or must be refused, and what two checks would say: the claim check alone (a number,
version or name the selection does not hold) and the whole chain of `check_answer` (claims, code, the question's
subject, the book's words, the asked value). A check earns its place when it stops must-refuse answers without
refusing right ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.config import PROJECT_ROOT, Settings
from bookrag.questions import load_questions
from programs.evaluate.metrics import key_fact_recall
from programs.lm.language_model import make_lm
from programs.rag.book_rag import BookRAG, format_history
from programs.rag.reader_inputs import reader_inputs
from programs.refusal.answer_checks import check_answer
from programs.refusal.claim_check import grounded_citations
from retrievers.passage import Passage

QUESTION_SETS = ("humanoid-primer.csv", "physical-ai-book-a.csv", "fastapi-tutorial.csv")


def unchecked_answer(program: BookRAG, question, selection: Passage) -> str | None:
    """The model's answer from the selection alone, as the program asks for it, before any check; None when it said
    the selection does not answer."""
    pred = program.read(reader_inputs(question.question, [selection], format_history(question.history)))
    return pred.answer if pred is not None and pred.answerable and pred.answer else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", nargs="+", default=["train", "dev"])
    args = parser.parse_args()
    program = BookRAG(None, lm=make_lm(Settings(lm="local")), context_words=0)
    tally = {"claim check": [0, 0], "whole chain": [0, 0]}  # [must-refuse stopped, right answers refused]
    answered = {"must refuse": 0, "right": 0}
    for name in QUESTION_SETS:
        for question in load_questions(PROJECT_ROOT / "datasets" / name):
            if not question.selected_text or question.split not in args.splits:
                continue
            selection = Passage(id="selection", score=1.0, text=question.selected_text, title="Selected text",
                                heading="", module="", source="", url="")
            answer = unchecked_answer(program, question, selection)
            if answer is None:
                continue
            right = question.answerable and key_fact_recall(question.key_facts, answer) >= 1
            if question.answerable and not right:
                continue  # a wrong answer to an answerable question: neither a cost nor a catch
            verdicts = {
                "claim check": grounded_citations(answer, [selection.text_with_heading], [1], question.question) is None,
                "whole chain": not check_answer(question.question, answer, [1], [selection]).passed,
            }
            answered["right" if right else "must refuse"] += 1
            for check, refused in verdicts.items():
                tally[check][0 if not right else 1] += refused
            print(f"{question.id:8} {question.split:5} {'right' if right else 'must refuse':11} "
                  f"claim check {'refuses' if verdicts['claim check'] else 'passes':7} "
                  f"whole chain {'refuses' if verdicts['whole chain'] else 'passes':7} {answer[:70]!r}")
    print(f"\nanswered, splits {' + '.join(args.splits)}: {answered['must refuse']} must-refuse, {answered['right']} right")
    for check, (stopped, cost) in tally.items():
        print(f"{check:12} stops {stopped} of {answered['must refuse']} must-refuse answers, "
              f"refuses {cost} of {answered['right']} right answers")


if __name__ == "__main__":
    main()
