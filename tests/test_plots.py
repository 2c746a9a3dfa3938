"""The evaluation plots (programs/evaluate/plots.py): labels a user wrote are drawn as printable text."""

from __future__ import annotations

import warnings

from bookrag.questions import Question
from programs.evaluate.plots import write_plots
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.reports import aggregate

GATE = {"weights": {"top_dense": 2.0}, "mean": {"top_dense": 0.5}, "scale": {"top_dense": 0.1}, "bias": 0.0,
        "threshold": 0.5}


def report(category: str) -> dict:
    answered = QuestionRow.of(Question("a", "a?", True, ("a.md",), ("x",), "x", category=category),
                              mode="generated", answer="x", answer_correct=True, passed=True, key_fact_recall=1.0,
                              token_f1=1.0, top_dense=0.7, gate_probability=0.9)
    refused = QuestionRow.of(Question("r", "r?", False, category="out-of-scope"), mode="refused", refused=True,
                             refusal_correct=True, passed=True, top_dense=0.2, gate_probability=0.1)
    rows = [answered, refused]
    return {**aggregate(rows), "gate": GATE, "rows": [row.to_dict() for row in rows]}


def test_a_category_or_program_name_holding_esc_or_bel_reaches_no_warning_or_stderr_raw(tmp_path, capfd, caplog):
    """matplotlib's "Glyph 27 missing from font(s)" warning quoted the label's ESC and BEL raw on stderr (issue 43)."""
    category = "factual\x1b]0;owned\x07\x1b[2J"
    reports = {"zero-shot\x1b[31m": report(category), "baseline\x07": report(category)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = write_plots(reports, tmp_path)
    said = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records] + list(capfd.readouterr())
    assert len(paths) == 3 and all(path.read_bytes().startswith(b"\x89PNG") for path in paths)
    assert [text for text in said if "\x1b" in text or "\x07" in text] == []


def test_a_label_holding_dollar_signs_is_drawn_as_text_not_parsed_as_math(tmp_path):
    """Two `$` start a matplotlib math formula: a category or program name holding one that does not parse was a
    ValueError (exit 70) after report.json was written."""
    category = r"cost $\frac{$ each"
    paths = write_plots({f"{category} (a program)": report(category), "baseline": report(category)}, tmp_path)
    assert len(paths) == 3 and all(path.read_bytes().startswith(b"\x89PNG") for path in paths)
