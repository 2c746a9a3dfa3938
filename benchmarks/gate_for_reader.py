"""How strict the refusal gate must be in front of a given reader: every question answered with the gate open, then
each threshold simulated on the recorded outcomes (a question whose gate probability is under the threshold is
refused without an LM call; any other gets the outcome it had).

    python benchmarks/gate_for_reader.py [--split dev] [--books humanoid-primer,book-a,fastapi]

The reader is the one configured (BOOKRAG_LOCAL_ADAPTER: the shipped adapter by default, `none` for the model as it
is). Prints, per threshold, pooled over the books: answerable right / refused / wrong, must-refuse refused, and marks
the threshold that answers the most answerable questions right while refusing at least as many must-refuse questions
as the default gate's threshold does with this reader (choose on dev; never on test). It writes nothing: the
shipped default calibration is rebuilt by `make calibration`, under the refusal policy
(programs/refusal/refusal_policy.py). The off-topic floor (top cosine under the policy's `min_top_cosine`) stays
whatever the threshold.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bookrag.cli  # noqa: F401  (first: sets LITELLM_LOCAL_MODEL_COST_MAP before dspy loads)
from bookrag.config import BUNDLED_BOOK, Settings
from bookrag.questions import load_questions

BOOKS = {
    "humanoid-primer": (BUNDLED_BOOK, ROOT / "datasets" / "humanoid-primer.csv"),
    "book-a": (ROOT.parent / "shared" / "corpora" / "physical-ai-book-a", ROOT / "datasets" / "physical-ai-book-a.csv"),
    "fastapi": (ROOT.parent / "shared" / "corpora" / "fastapi-tutorial", ROOT / "datasets" / "fastapi-tutorial.csv"),
}


def recorded_outcomes(settings: Settings, books: list[str], split: str) -> list[dict]:
    """Each question's gate probability, whether the off-topic floor refuses it, and its outcome with the gate open."""
    from programs.evaluate.reports import question_rows
    from programs.lm.language_model import make_lm
    from programs.rag.book_rag import BookRAG
    from retrievers import BookIndex

    lm, records = make_lm(settings), []
    for name in books:
        book, questions_file = BOOKS[name]
        questions = [q for q in load_questions(questions_file) if q.split == split and not q.selected_text]
        with BookIndex(settings, book) as index:
            index.update(print, None)
            program = BookRAG.from_settings(settings, index, lm=lm)
            threshold = program.gate.threshold
            program.gate.threshold = 0.0  # open: the floor on the top cosine still refuses off-topic questions
            for q, row in zip(questions, question_rows(program, questions, description=name), strict=True):
                records.append({"id": f"{name}:{q.id}", "style": q.style or "must-refuse", "answerable": q.answerable,
                                "probability": row.gate_probability or 0.0, "default_threshold": threshold,
                                "floor": row.refusal_reason == "gate", "outcome": _outcome(row)})
    return records


def _outcome(row) -> str:
    if row.refused:
        return "refused"
    if not row.answerable:
        return "answered"
    return "right" if row.answer_correct else "wrong"


def simulate(records: list[dict], threshold: float) -> dict[str, int]:
    counts = {"right": 0, "refused": 0, "wrong": 0, "must_refuse_refused": 0, "must_refuse": 0}
    for r in records:
        outcome = "refused" if r["floor"] or r["probability"] < threshold else r["outcome"]
        if r["answerable"]:
            counts[outcome] += 1
        else:
            counts["must_refuse"] += 1
            counts["must_refuse_refused"] += outcome == "refused"
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=("train", "dev"))
    parser.add_argument("--books", default=",".join(BOOKS))
    args = parser.parse_args(argv)
    records = recorded_outcomes(Settings.from_env(), args.books.split(","), args.split)
    default = records[0]["default_threshold"]
    floor = simulate(records, default)["must_refuse_refused"]
    grid = sorted({round(x / 100, 2) for x in range(0, 100, 5)} | {round(default, 3)})
    best = max((t for t in grid if simulate(records, t)["must_refuse_refused"] >= floor),
               key=lambda t: (simulate(records, t)["right"], -simulate(records, t)["wrong"], t))
    print(f"{'threshold':>9}  {'right':>5} {'refused':>7} {'wrong':>5}  must-refuse refused")
    for t in grid:
        c = simulate(records, t)
        mark = " <- default" if t == round(default, 3) else " <- chosen" if t == best else ""
        print(f"{t:>9.3f}  {c['right']:>5} {c['refused']:>7} {c['wrong']:>5}  {c['must_refuse_refused']}/"
              f"{c['must_refuse']}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
