"""The figures table (programs/evaluate/figures.py) is the one place a report figure is named: `aggregate` returns
exactly its figures, in its order, and every view of them (--json, the terminal table, the compile's scores and
candidate table, the comparison plot, predictions.csv) takes its list from it."""

from __future__ import annotations

import ast
import dataclasses

import pytest
from conftest import PROJECT_ROOT

from bookrag.questions import Question
from programs.cli import evaluate
from programs.evaluate.figures import (
    BREAKDOWNS,
    CANDIDATE_COLUMNS,
    CANDIDATE_FIGURES,
    FIGURES,
    GROUP,
    HEADLINE,
    QUESTION_FIGURES,
    SCORES,
    SUMMARY,
    TERMINAL,
)
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.report_files import PREDICTION_COLUMNS
from programs.evaluate.reports import aggregate, figures_of, group_figures

NAMES = [f.name for f in FIGURES]
# Every file that shows or stores report figures: none may keep a list of them of its own.
CONSUMERS = ("programs/cli/evaluate.py", "programs/cli/optimize.py", "programs/evaluate/reports.py",
             "programs/evaluate/report_files.py", "programs/evaluate/plots.py", "programs/evaluate/program_runs.py", "programs/compile/compiler.py",
             "programs/compile/artifact.py")


def rows(semantic: bool) -> list[QuestionRow]:
    answered = QuestionRow.of(Question("a", "a?", True, ("a.md",), ("x",), "x", category="factual"), mode="generated",
                              answer="x", answer_correct=True, passed=True, key_fact_recall=1.0, token_f1=1.0,
                              answer_words=1, gold_cited=True, gold_retrieved=True, lm_answered=True, combined=1.0,
                              latency_ms=10.0, prompt_tokens=100, completion_tokens=5)
    refused = QuestionRow.of(Question("r", "r?", False, category="out-of-scope"), mode="refused", refused=True,
                             refusal_correct=True, passed=True, combined=1.0, latency_ms=5.0)
    if semantic:
        answered.semantic_f1 = 0.5
    return [answered, refused]


@pytest.mark.parametrize("semantic", [True, False])
def test_aggregate_returns_the_figures_of_the_table_in_its_order(semantic):
    report = aggregate(rows(semantic))
    expected = [name for name in NAMES if semantic or name != "semantic_f1"]  # semantic F1 needs an LM judge
    assert list(report) == [*expected, *BREAKDOWNS]


def test_a_groups_figures_are_the_report_figures_marked_group_over_its_questions():
    """One computation per figure: a category's or a style's false refusal rate is the report's, over its rows."""
    questions = rows(semantic=False)
    wrongly_refused = QuestionRow.of(Question("w", "w?", True, ("a.md",), ("x",), "x", category="factual"),
                                     mode="refused", refused=True, key_fact_recall=0.0, token_f1=0.0)
    factual = [questions[0], wrongly_refused]
    figures = figures_of(factual)
    assert group_figures(factual) == {name: figures[name] for name in GROUP}
    assert aggregate([*questions, wrongly_refused])["per_category"]["factual"] == group_figures(factual)
    assert figures["false_refusal_rate"] == figures["key_fact_accuracy"] == 0.5


def test_no_consumer_keeps_a_list_of_figure_names_of_its_own():
    """A module-level literal (tuple, list, set or dict) naming two figures or more is a second list to keep."""
    names = set(NAMES)
    found = []
    for path in CONSUMERS:
        for node in ast.parse((PROJECT_ROOT / path).read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Tuple | ast.List | ast.Set | ast.Dict):
                named = {c.value for c in ast.walk(value) if isinstance(c, ast.Constant) and c.value in names}
                if len(named) >= 2:
                    found.append(f"{path}:{node.lineno}: {sorted(named)}")
    assert found == []


def test_the_summary_holds_every_figure_of_the_report():
    report = {**aggregate(rows(True)), "rows": [], "gate": {}, "k": 5}
    summary = evaluate.summary("zero-shot", report)
    assert list(summary) == ["program", *SUMMARY]
    assert SUMMARY == (*NAMES, *BREAKDOWNS)  # every figure is in --json today


def test_the_terminal_table_shows_the_labeled_figures_in_table_order(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    report = aggregate(rows(True))
    evaluate.print_programs({"zero-shot": report}, {"collection": "c", "split": "dev"})
    lines = capsys.readouterr().out.splitlines()
    shown = [f.label for f in TERMINAL for line in lines if line.startswith(f"│ {f.label} ")]
    assert shown == [f.label for f in TERMINAL]
    tokens = next(line for line in lines if "prompt tokens per LM answer" in line)
    assert " 100 " in tokens  # the figure's format: no decimals


def test_the_compile_and_plot_views_are_subsets_of_the_table_with_their_titles():
    assert set(SCORES) <= set(CANDIDATE_FIGURES) <= set(NAMES) and set(HEADLINE) <= set(NAMES)
    assert [f.name for f in CANDIDATE_COLUMNS] == ["n", "combined", "key_fact_accuracy", "refusal_recall",
                                                   "false_refusal_rate", "token_f1"]
    assert {f.name for f in CANDIDATE_COLUMNS} <= set(CANDIDATE_FIGURES)  # a column shows a recorded figure


def test_predictions_csv_carries_each_per_question_figure_of_a_row():
    fields = {f.name for f in dataclasses.fields(QuestionRow)} | {"result"}  # result: pass, fail or error
    assert set(QUESTION_FIGURES) <= fields
    assert PREDICTION_COLUMNS[-len(QUESTION_FIGURES) - 1:-1] == QUESTION_FIGURES
