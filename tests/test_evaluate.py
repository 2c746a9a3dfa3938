"""`python evaluate.py` in process: a small book and question file in tmp_path, the fake embedder instead of MiniLM,
the offline default program (extractive: no LM is called). Plus `program_report`'s aggregation over a stub program
whose predictions are fixed, so every figure can be checked by hand."""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import sys
import time

import dspy
import pytest
from conftest import (
    PROJECT_ROOT,
    SMALL_BOOK,
    clean_env,
    killed_between_renames,
    run_evaluate,
    write_book,
)
from question_files import EVALUATE_QUESTIONS

from bookrag.config import REFUSAL_MESSAGE, Settings
from bookrag.questions import Question
from programs.compile.artifact import write_artifact
from programs.evaluate.reports import program_report
from programs.rag.book_rag import BookRAG
from programs.rag.cited_text import CitedText
from programs.refusal.refusal_gate import RefusalGate
from retrievers.passage import Passage

TEST_IDS = ["e-1", "e-2", "e-3", "e-4", "e-5", "e-6", "e-7"]
SUMMARY = {"program", "n", "key_fact_accuracy", "refusal_recall", "false_refusal_rate", "citation_validity",
           "gold_citation_rate", "recall_at_k", "latency_p50_ms", "latency_p95_ms", "combined"}
RATES = SUMMARY - {"program", "n", "latency_p50_ms", "latency_p95_ms"}


def only_json(capsys) -> dict:
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1, out  # one line: nothing else on stdout
    document = json.loads(out)
    assert isinstance(document, dict)
    return document


def check_summary(summary: dict, program: str) -> None:
    assert SUMMARY <= set(summary)
    assert summary["program"] == program
    assert summary["n"] == len(TEST_IDS)  # the default split is test: the train row is left out
    assert all(0.0 <= summary[key] <= 1.0 for key in RATES), summary
    assert summary["latency_p95_ms"] >= summary["latency_p50_ms"] > 0


def test_json_prints_one_object_with_the_summary_of_the_program(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    summary = only_json(capsys)
    check_summary(summary, "zero-shot")
    assert summary["citation_validity"] == 1.0  # the extractive answerer cites only what it retrieved


def test_json_and_report_json_write_each_figure_once_under_its_one_name(workspace, capsys):
    """The names issue 40 replaced (answer_accuracy; a group's answerable, accuracy, right, wrongly_refused) are
    written no more beside key_fact_accuracy, n_answerable, pass_rate and false_refusal_rate."""
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    summary = only_json(capsys)
    report = json.loads((workspace["out"] / "report.json").read_text())["programs"]["zero-shot"]
    for figures in (summary, report):
        assert "answer_accuracy" not in figures and "key_fact_accuracy" in figures
        for group in (*figures["per_category"].values(), *figures["per_style"].values()):
            assert not {"answerable", "accuracy", "right", "wrongly_refused"} & set(group)
            assert {"n_answerable", "pass_rate", "key_fact_accuracy", "false_refusal_rate"} <= set(group)


def test_a_book_edited_since_its_last_run_is_said_so_and_indexed_again(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    capsys.readouterr()
    page = next(p for p in sorted(workspace["book"].rglob("*.md")))
    page.write_text(page.read_text(encoding="utf-8") + "\nAn added sentence about nothing asked.\n", encoding="utf-8")
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    err = capsys.readouterr().err
    assert f"The book changed since it was indexed (1 file(s): {page.relative_to(workspace['book'])})" in err
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    assert "changed" not in capsys.readouterr().err  # unchanged: nothing said


def test_compare_reports_both_programs_and_writes_the_files(workspace, capsys):
    assert run_evaluate(workspace, "--compare", "zero-shot", "baseline", "--json") == 0
    document = only_json(capsys)
    assert set(document["programs"]) == {"zero-shot", "baseline"}
    for name, summary in document["programs"].items():
        check_summary(summary, name)

    out = workspace["out"]
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["programs"] == ["zero-shot", "baseline"]
    assert report["settings"]["split"] == "test" and report["settings"]["questions"] == str(workspace["questions"])
    assert report["programs"]["baseline"]["search_mode"] == "dense" and report["programs"]["baseline"]["k"] == 5
    with (out / "predictions.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["program"], r["id"]) for r in rows] == [(p, i) for p in ("zero-shot", "baseline") for i in TEST_IDS]
    assert {r["result"] for r in rows} <= {"pass", "fail"}
    for png in ("score_distribution.png", "category_accuracy.png", "comparison.png"):
        assert (out / png).read_bytes().startswith(b"\x89PNG"), png
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left behind


@pytest.mark.parametrize("configured, recorded", [(None, "none"), ("parts", "parts")])
def test_the_configured_query_expansion_reaches_the_program_and_the_report(workspace, monkeypatch, capsys,
                                                                           configured, recorded):
    if configured:
        monkeypatch.setenv("BOOKRAG_EXPAND", configured)
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    only_json(capsys)
    assert json.loads((workspace["out"] / "report.json").read_text())["settings"]["expand"] == recorded


def test_terminal_output_is_a_table_per_program(workspace, capsys):
    assert run_evaluate(workspace, "--compare", "baseline", "zero-shot") == 0
    out = capsys.readouterr().out
    assert "combined score" in out and "baseline" in out and "zero-shot" in out
    assert "out-of-scope" in out and "injection" in out  # the per-category table
    assert f"to {workspace['out']}" in out


def test_compare_loads_an_artifact_on_the_same_index(workspace, capsys):
    """The compiled program's state (here: a gate that refuses everything) is what gets evaluated, next to
    zero-shot, in one process that opens the embedded index once."""
    from retrievers import BookIndex

    settings = Settings.from_env().replace(book_dir=workspace["book"])
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever)
        program.gate = RefusalGate.cosine_cut(2.0)  # no cosine reaches 2
        manifest = {"bookrag_version": "test", "dspy_version": dspy.__version__, "lm": "local",
                    "embedder": index.embedder.name, "collection": index.collection, "book": str(workspace["book"]),
                    "index_fingerprint": index.fingerprint()}
    artifact = write_artifact(program, workspace["root"] / "artifacts" / "refuse-all", manifest)

    assert run_evaluate(workspace, "--compare", "zero-shot", str(artifact), "--json") == 0
    compiled = only_json(capsys)["programs"][str(artifact)]
    assert compiled["refusal_recall"] == 1.0
    assert compiled["key_fact_accuracy"] == pytest.approx(1 / 5)  # only the selected-text question, which has no gate
    assert compiled["false_refusal_rate"] == pytest.approx(4 / 5)


def test_a_program_left_aside_by_a_killed_optimize_is_read_where_it_lies_not_rejected(workspace, capsys):
    """An optimize killed between its two renames leaves `.<name>.old-*` and no `<name>`: --program reads it there,
    and moves nothing (issue 49: only a write repairs a swap)."""
    from retrievers import BookIndex

    settings = Settings.from_env().replace(book_dir=workspace["book"])
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, answer_mode="extractive")
        program.gate = RefusalGate.cosine_cut(2.0)  # no cosine reaches 2
        manifest = {"bookrag_version": "test", "dspy_version": dspy.__version__, "lm": "local",
                    "embedder": index.embedder.name, "collection": index.collection, "book": str(workspace["book"]),
                    "index_fingerprint": index.fingerprint(), "answer_mode": "extractive"}
    artifact = write_artifact(program, workspace["root"] / "artifacts" / "refuse-all", manifest)
    killed_between_renames(artifact, settings.data_dir)

    assert run_evaluate(workspace, "--program", str(artifact), "--json") == 0
    assert only_json(capsys)["refusal_recall"] == 1.0  # the artifact's gate, not zero-shot's
    assert not artifact.exists() and next(artifact.parent.glob(".refuse-all.old-*")).is_dir()


def test_without_a_program_flag_the_default_artifact_is_used_if_compiled(workspace, capsys):
    assert run_evaluate(workspace, "--json") == 0
    assert only_json(capsys)["program"] == "zero-shot"  # nothing compiled yet


@pytest.mark.parametrize(("threshold", "code"), [("1.0", 5), ("0.0", 0)])
def test_min_combined_gates_the_combined_score(workspace, capsys, threshold, code):
    assert run_evaluate(workspace, "--baseline", "--min-combined", threshold) == code  # the seed design: below 1
    err = capsys.readouterr().err
    assert ("below --min-combined" in err) is (code == 5)


@pytest.mark.parametrize(("args", "message"), [
    (["--split", "validation"], "invalid choice: 'validation'"),
    (["--zero-shot", "--baseline"], "not allowed with argument"),
    (["--compare", "baseline", "baseline"], "two different programs"),
    (["--program", "no/such/artifact"], "is not an artifact folder"),
    (["--zero-shot", "--top-k", "3"], "apply to --retrieval-only"),
    (["--retrieval-only", "--top-k", "51"], "argument --top-k: must be between 1 and 50, got 51"),
    (["--retrieval-only", "--top-k", "0"], "argument --top-k: must be between 1 and 50, got 0"),
    (["--retrieval-only", "--k", "4"], "unrecognized arguments: --k"),  # the old names, one for each setting
    (["--zero-shot", "--min-accuracy", "0.5"], "unrecognized arguments: --min-accuracy"),
    (["--zero-shot", "--semantic-f1"], "needs a hosted LM judge"),
    (["--zero-shot", "--min-combined", "2"], "--min-combined is a combined score from 0 to 1, got 2.0"),
    (["--zero-shot", "--min-combined", "-0.1"], "--min-combined is a combined score from 0 to 1"),
])
def test_bad_arguments_exit_4_before_touching_the_index(workspace, capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        run_evaluate(workspace, *args)
    assert exc.value.code == 4
    assert message in capsys.readouterr().err
    assert not (workspace["root"] / "data" / "qdrant").exists()


def test_retrieval_only_reads_top_k_as_every_top_k_does(workspace, capsys, monkeypatch):
    """BOOKRAG_TOP_K, then --top-k, as ask.py and the programs read them."""
    monkeypatch.setenv("BOOKRAG_TOP_K", "2")
    assert run_evaluate(workspace, "--retrieval-only", "--json") == 0
    assert only_json(capsys)["k"] == 2
    assert run_evaluate(workspace, "--retrieval-only", "--top-k", "3", "--json") == 0
    assert only_json(capsys)["k"] == 3


def test_a_split_without_questions_is_a_question_file_error(workspace):
    from bookrag.errors import DatasetError

    workspace["questions"].write_text(EVALUATE_QUESTIONS.replace(",test\n", ",train\n"), encoding="utf-8")
    with pytest.raises(DatasetError, match="no test questions") as exc:
        run_evaluate(workspace, "--zero-shot")
    assert exc.value.exit_code == 4


# -- program_report: aggregation over fixed predictions ---------------------------------------------------------

def passage(source: str, dense: float) -> Passage:
    return Passage(id=source, score=dense, text="", title="", heading="", module="", source=source, url="",
                   dense_score=dense)


class FixedProgram:
    """Answers each question id with a fixed prediction; has what program_report reads from a BookRAG."""

    top_k, search_mode, generates = 2, "hybrid", False

    def __init__(self, predictions: dict[str, dspy.Prediction]):
        self.predictions, self.gate = predictions, RefusalGate()

    def __call__(self, question, history=(), selected_text=""):
        return self.predictions[question]


def fixed(answer, citations=(), sources=("a.md", "b.md"), refused=False) -> dspy.Prediction:
    return dspy.Prediction(answer=REFUSAL_MESSAGE if refused else answer, citations=list(citations),
                           cited_texts=[CitedText(answer, 0, len(answer))] * len(citations),  # the answer's words
                           passages=[passage(s, 0.6 - 0.1 * i) for i, s in enumerate(sources)], is_refusal=refused,
                           refusal_reason="gate" if refused else None, mode="refused" if refused else "extractive",
                           gate={"probability": 0.2 if refused else 0.9, "threshold": 0.5})


def test_program_report_aggregates_the_per_question_metrics():
    questions = [
        Question("right", "right", True, ("a.md",), ("24 kg",), "It has 24 kg.", category="factual"),
        Question("half", "half", True, ("b.md",), ("1.2 m", "24 kg"), category="factual"),
        Question("missed", "missed", True, ("z.md",), ("x",), "It is x.", category="factual"),  # never retrieved
        Question("refuse-ok", "refuse-ok", False, category="near-miss"),
        Question("refuse-bad", "refuse-bad", False, category="near-miss"),
    ]
    program = FixedProgram({
        "right": fixed("It has 24 kg.", citations=[1]),  # 1.0
        "half": fixed("It is 1.2 m.", citations=[1, 5]),  # 0.8 * 0.5 (no reference) + 0.1 * 0.5 + 0 (b.md not cited)
        "missed": fixed("", refused=True),  # falsely refused: 0
        "refuse-ok": fixed("", refused=True),  # 1
        "refuse-bad": fixed("Something.", citations=[2]),  # 0
    })
    report = program_report(program, questions, progress=False)
    assert report["n"] == 5 and (report["n_answerable"], report["n_must_refuse"]) == (3, 2)
    assert report["combined"] == pytest.approx((1.0 + 0.45 + 0 + 1 + 0) / 5)
    assert report["token_f1"] == pytest.approx((1.0 + 0.0) / 2)  # questions with a reference; refused scores 0
    assert report["answer_words_p50"] == 4
    assert report["key_fact_accuracy"] == pytest.approx(1 / 3)
    assert report["key_facts_in_answers"] == pytest.approx(1 / 2)  # of the two answered
    assert report["refusal_recall"] == pytest.approx(1 / 2)
    assert report["false_refusal_rate"] == pytest.approx(1 / 3)
    assert report["wrong_or_partial"] == pytest.approx(1 / 3)  # "half": a key fact missing
    assert report["pass_rate"] == pytest.approx(2 / 5)  # "right" and "refuse-ok"
    assert report["citation_validity"] == pytest.approx((1 + 0.5 + 1) / 3)  # answered rows, the wrong one too
    assert report["gold_citation_rate"] == pytest.approx(1 / 2)
    assert report["cited_text_support"] == pytest.approx(1 / 2)  # "half"'s cited text misses a key fact
    assert report["recall_at_k"] == pytest.approx(2 / 3)
    assert report["per_category"]["factual"] == {
        "n": 3, "n_answerable": 3, "pass_rate": pytest.approx(1 / 3), "combined": pytest.approx(1.45 / 3),
        "cited_text_support": pytest.approx(1 / 2),
        "token_f1": 0.5, "answer_words_p50": 4, "key_fact_accuracy": pytest.approx(1 / 3),
        "false_refusal_rate": pytest.approx(1 / 3), "wrong_or_partial": pytest.approx(1 / 3)}
    assert report["per_category"]["near-miss"]["pass_rate"] == 0.5
    assert [r["passed"] for r in report["rows"]] == [True, False, False, True, False]
    assert report["rows"][0]["top_dense"] == 0.6 and report["tokens_per_question"] == 0
    assert [r["cited_numbers"] for r in report["rows"]] == [[1], [1, 5], [], [], [2]]


class FailingProgram(FixedProgram):
    """A FixedProgram whose LM fails on the questions named in `failing`."""

    def __init__(self, predictions, failing):
        super().__init__(predictions)
        self.failing = failing

    def __call__(self, question, history=(), selected_text=""):
        if question in self.failing:
            from bookrag.errors import AgentError

            raise AgentError("Language model openai/x timed out")
        return super().__call__(question)


def test_a_question_the_program_fails_on_is_a_failed_row_and_the_run_goes_on():
    questions = [Question("ok", "ok", True, ("a.md",), ("24 kg",), "It has 24 kg."),
                 Question("lost", "lost", True, ("a.md",), ("24 kg",), "It has 24 kg."),
                 Question("refuse", "refuse", False)]
    program = FailingProgram({"ok": fixed("It has 24 kg.", citations=[1])}, failing={"lost", "refuse"})
    report = program_report(program, questions, progress=False)
    assert report["errors"] == 2 and report["n"] == 3
    lost, refuse = report["rows"][1], report["rows"][2]
    assert lost["error"] == "Language model openai/x timed out" and lost["mode"] == "error"
    assert (lost["passed"], lost["combined"], lost["key_fact_recall"], lost["token_f1"]) == (False, 0.0, 0.0, 0.0)
    assert (refuse["passed"], refuse["refused"], refuse["key_fact_recall"]) == (False, False, None)
    assert report["key_fact_accuracy"] == pytest.approx(1 / 2) and report["refusal_recall"] == 0.0


# -- per style: the question file's style column ---------------------------------------------------------------

STYLES = {"e-1": "book-words", "e-2": "how-to", "e-3": "paraphrase", "e-7": "follow-up", "e-8": "book-words"}
STYLED_QUESTIONS = "\n".join(  # with a style column; must-refuse and selected-text rows have none
    line + "," + ("style" if i == 0 else STYLES.get(line.split(",")[0], ""))
    for i, line in enumerate(EVALUATE_QUESTIONS.splitlines())) + "\n"


def test_per_style_reports_each_style_and_must_refuse_and_leaves_out_answerable_rows_without_a_style():
    questions = [
        Question("right", "right", True, ("a.md",), ("24 kg",), category="factual", style="paraphrase"),
        Question("half", "half", True, ("b.md",), ("1.2 m", "24 kg"), category="factual", style="paraphrase"),
        Question("missed", "missed", True, ("a.md",), ("x",), category="factual", style="definition"),
        Question("selected", "selected", True, ("a.md",), ("24 kg",), category="selected-text"),  # no style
        Question("refuse-ok", "refuse-ok", False, category="near-miss"),
        Question("refuse-bad", "refuse-bad", False, category="near-miss"),
    ]
    program = FixedProgram({"right": fixed("It has 24 kg.", citations=[1]), "half": fixed("It is 1.2 m."),
                            "missed": fixed("", refused=True), "selected": fixed("It has 24 kg."),
                            "refuse-ok": fixed("", refused=True), "refuse-bad": fixed("Something.")})
    per_style = program_report(program, questions, progress=False)["per_style"]
    assert list(per_style) == ["definition", "must-refuse", "paraphrase"]  # the selected-text row is in none
    ends = {style: (row["n"], row["n_answerable"], row["pass_rate"], row["key_fact_accuracy"],
                    row["false_refusal_rate"], row["wrong_or_partial"]) for style, row in per_style.items()}
    assert ends == {"paraphrase": (2, 2, 0.5, 0.5, 0.0, 0.5),  # one right, one with a key fact missing
                    "definition": (1, 1, 0.0, 0.0, 1.0, 0.0),  # wrongly refused
                    "must-refuse": (2, 0, 0.5, 0.0, 0.0, 0.0)}  # one refused, one answered


@pytest.fixture
def styled(workspace):
    workspace["questions"].write_text(STYLED_QUESTIONS, encoding="utf-8")
    return workspace


def test_json_report_and_predictions_carry_the_styles(styled, capsys):
    assert run_evaluate(styled, "--zero-shot", "--json") == 0
    per_style = only_json(capsys)["per_style"]
    assert {style: row["n"] for style, row in per_style.items()} == {
        "book-words": 1, "follow-up": 1, "how-to": 1, "must-refuse": 2, "paraphrase": 1}  # e-6: selected text
    for row in per_style.values():
        if row["n_answerable"]:
            assert row["key_fact_accuracy"] + row["false_refusal_rate"] + row["wrong_or_partial"] == pytest.approx(1.0)
    report = json.loads((styled["out"] / "report.json").read_text())
    assert report["programs"]["zero-shot"]["per_style"] == per_style and report["settings"]["styles"] is None
    with (styled["out"] / "predictions.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["id"]: r["style"] for r in rows} == {i: STYLES.get(i, "") for i in TEST_IDS}


def test_terminal_shows_a_per_style_table(styled, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    assert run_evaluate(styled, "--compare", "baseline", "zero-shot") == 0
    out = capsys.readouterr().out
    table = out[out.index("Per style"):out.index("Wrote ")]
    shown = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│ ")]
    assert shown == ["book-words", "follow-up", "how-to", "must-refuse", "paraphrase"]
    paraphrase = next(line for line in table.splitlines() if line.startswith("│ paraphrase "))
    assert re.search(r"│ +1 │ [01]\.\d\d · [01]\.\d\d · [01]\.\d\d │ [01]\.\d\d · ", paraphrase), paraphrase


def test_a_question_file_without_styles_shows_no_per_style_table(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot") == 0
    assert "Per style" not in capsys.readouterr().out


def test_style_evaluates_only_the_questions_of_those_styles(styled, capsys):
    assert run_evaluate(styled, "--zero-shot", "--style", "paraphrase,must-refuse", "--json") == 0
    summary = only_json(capsys)
    assert summary["n"] == 3 and set(summary["per_style"]) == {"paraphrase", "must-refuse"}
    report = json.loads((styled["out"] / "report.json").read_text())
    assert [r["id"] for r in report["programs"]["zero-shot"]["rows"]] == ["e-3", "e-4", "e-5"]
    assert report["settings"]["styles"] == ["paraphrase", "must-refuse"]


@pytest.mark.parametrize("value", ["poem", "paraphrase,poem", ","])
def test_an_unknown_style_exits_4_before_touching_the_index(styled, capsys, value):
    with pytest.raises(SystemExit) as exc:
        run_evaluate(styled, "--zero-shot", "--style", value)
    assert exc.value.code == 4
    err = capsys.readouterr().err
    assert "argument --style: unknown style" in err and "must-refuse" in err and "book-words" in err
    assert not (styled["root"] / "data" / "qdrant").exists()


def test_a_style_no_question_has_is_a_question_file_error(styled):
    from bookrag.errors import DatasetError

    with pytest.raises(DatasetError, match="has no test questions of style definition") as exc:
        run_evaluate(styled, "--zero-shot", "--style", "definition")
    assert exc.value.exit_code == 4


# -- --threads: a hosted LM answers questions in parallel ------------------------------------------------------

HOSTED_REPLY = ("[[ ## reasoning ## ]]\nPassage 1 says so.\n\n[[ ## answer ## ]]\nIt is described in the primer.\n\n"
                "[[ ## citations ## ]]\n[1]\n\n[[ ## answerable ## ]]\nTrue\n\n[[ ## completed ## ]]")


@pytest.fixture
def hosted_lm(workspace, monkeypatch):
    """A generated-mode program on a hosted LM: the fake OpenAI-compatible server, each reply 0.2 s late."""
    from fake_openai import FakeOpenAI, serving

    with serving(FakeOpenAI(HOSTED_REPLY)) as fake:
        fake.delay = 0.2
        monkeypatch.setenv("BOOKRAG_LM", "openai/fake-model")
        monkeypatch.setenv("BOOKRAG_LM_API_BASE", fake.api_base)
        monkeypatch.setenv("BOOKRAG_ANSWER_MODE", "generated")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        yield fake


@pytest.mark.parametrize("threads", [1, 4])
def test_threads_answer_questions_in_parallel_and_keep_their_order(workspace, hosted_lm, capsys, threads):
    assert run_evaluate(workspace, "--zero-shot", "--threads", str(threads), "--json") == 0
    summary = only_json(capsys)
    report = json.loads((workspace["out"] / "report.json").read_text())
    rows = report["programs"]["zero-shot"]["rows"]
    assert [r["id"] for r in rows] == TEST_IDS and report["settings"]["threads"] == threads
    answered = [r for r in rows if r["mode"] == "generated"]
    assert len(answered) >= 2 and summary["lm_calls"] >= len(answered)
    assert all(r["answer"] == "It is described in the primer." for r in answered)
    assert (hosted_lm.max_in_flight > 1) is (threads > 1)


def test_threads_with_the_local_model_run_one_at_a_time_and_say_so(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot", "--threads", "4", "--json") == 0
    assert "the local model answers one question at a time" in capsys.readouterr().err
    assert json.loads((workspace["out"] / "report.json").read_text())["settings"]["threads"] == 1


def test_threads_below_one_exit_4(workspace, capsys):
    with pytest.raises(SystemExit) as caught:
        run_evaluate(workspace, "--zero-shot", "--threads", "0")
    assert caught.value.code == 4 and "--threads must be at least 1" in capsys.readouterr().err


# -- --out: only a report folder bookrag wrote is replaced, and that is checked before any work ----------------

@pytest.mark.parametrize("out, message", [
    ("thesis", "holds files that are not a bookrag evaluation report (no report.json of ours)"),
    ("notes.txt", "is a file, not a folder"),
    ("notes.txt/report", "is under"),
    (".", "which bookrag must not replace"),  # the current folder (it holds the book too)
    ("tiny-book", "is the book"),
    ("/sys/bookrag-report", "cannot be written"),
])
def test_an_out_it_may_not_write_is_refused_before_the_index_is_touched(workspace, out, message):
    from bookrag.errors import BadArgumentError

    (workspace["root"] / "thesis").mkdir()
    (workspace["root"] / "thesis" / "chapter1.tex").write_text("my only copy")
    (workspace["root"] / "notes.txt").write_text("mine")
    workspace["out"] = workspace["root"] / out
    with pytest.raises(BadArgumentError, match=re.escape(message)) as caught:
        run_evaluate(workspace, "--zero-shot")
    assert caught.value.exit_code == 4 and str(caught.value).startswith(f"--out {workspace['out']} ")
    assert (workspace["root"] / "thesis" / "chapter1.tex").read_text() == "my only copy"
    assert (workspace["root"] / "notes.txt").read_text() == "mine"
    assert not (workspace["root"] / "data" / "qdrant").exists()


def test_a_report_folder_of_ours_is_written_again_and_left_clean(workspace, capsys):
    assert run_evaluate(workspace, "--zero-shot", "--json") == 0
    first = sorted(p.name for p in workspace["out"].iterdir())
    assert run_evaluate(workspace, "--baseline", "--json") == 0
    assert sorted(p.name for p in workspace["out"].iterdir()) == first  # no temp file, no .old-* left
    report = json.loads((workspace["out"] / "report.json").read_text())
    assert list(report["programs"]) == ["baseline"] and report["partial"] is False


# -- partial work survives: a program that fails after another finished, and a stop signal --------------------

def is_warm_up(body: dict) -> bool:
    """BookRAG.warm_up asks for one token; no answer does."""
    return 1 in (body.get("max_tokens"), body.get("max_completion_tokens"))


class FailFromTheSecondWarmUp(list):
    """A FakeOpenAI script: every request from the second program's warm-up on fails with a 500."""

    def __init__(self, server):
        super().__init__()
        self.server, self.warm_ups = server, 0

    def __bool__(self) -> bool:
        return True

    def pop(self, index=0):
        self.warm_ups += is_warm_up(self.server.requests[-1])
        return (500, 0.0) if self.warm_ups >= 2 else (200, 0.0)


def test_compare_keeps_the_first_programs_report_when_the_second_fails(workspace, hosted_lm):
    from bookrag.errors import AgentError

    hosted_lm.script = FailFromTheSecondWarmUp(hosted_lm)
    with pytest.raises(AgentError) as caught:
        run_evaluate(workspace, "--compare", "baseline", "zero-shot")
    message = str(caught.value)
    assert caught.value.exit_code == 3
    assert message.startswith("zero-shot failed: Language model") and message.endswith(
        f"; the report of baseline is in {workspace['out']}")
    report = json.loads((workspace["out"] / "report.json").read_text())
    assert report["partial"]["reason"].startswith("zero-shot failed: Language model")
    assert report["partial"]["answered"] == {"baseline": len(TEST_IDS), "zero-shot": 0}
    assert [r["id"] for r in report["programs"]["baseline"]["rows"]] == TEST_IDS
    with (workspace["out"] / "predictions.csv").open(newline="", encoding="utf-8") as handle:
        assert {row["program"] for row in csv.DictReader(handle)} == {"baseline"}


def evaluate_in_a_process(tmp_path, fake, *args) -> subprocess.Popen:
    """The real CLI in its own process on the real embedder, answering through the fake OpenAI server."""
    book = write_book(tmp_path / "tiny-book", SMALL_BOOK)
    (tmp_path / "questions.csv").write_text(EVALUATE_QUESTIONS, encoding="utf-8")
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_LM="openai/fake-model",
                    BOOKRAG_LM_API_BASE=fake.api_base, BOOKRAG_ANSWER_MODE="generated", OPENAI_API_KEY="sk-test")
    return subprocess.Popen([sys.executable, str(PROJECT_ROOT / "evaluate.py"), "--zero-shot", "--book", book,
                             "--questions", tmp_path / "questions.csv", "--out", tmp_path / "report", "--json", *args],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def questions_asked(fake) -> int:
    return sum(not is_warm_up(r) for r in fake.requests)


def stop_once_asked(child: subprocess.Popen, fake, asked: int, signum: int) -> tuple[str, str]:
    """Send `signum` once `asked` questions reached the LM; the child's stdout and stderr."""
    try:
        deadline = time.monotonic() + 120
        while questions_asked(fake) < asked and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        child.send_signal(signum)
        return child.communicate(timeout=60)
    finally:
        child.kill()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_signal_writes_the_finished_rows_as_a_partial_report(tmp_path, signum, code):
    """The signal comes once two questions reached the LM (0.3 s a reply)."""
    from fake_openai import FakeOpenAI, serving

    with serving(FakeOpenAI(HOSTED_REPLY)) as fake:
        fake.delay = 0.3
        child = evaluate_in_a_process(tmp_path, fake)
        stdout, stderr = stop_once_asked(child, fake, 2, signum)
    assert child.returncode == code, stderr
    assert stdout == ""  # --json prints nothing for a run that did not finish
    assert f"{signal.Signals(signum).name}: stopped; wrote the " in stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    answered = report["partial"]["answered"]["zero-shot"]
    assert report["partial"]["reason"] == f"stopped by {signal.Signals(signum).name}"
    assert report["partial"]["questions"] == len(TEST_IDS) and 1 <= answered < len(TEST_IDS)
    rows = report["programs"]["zero-shot"]["rows"]
    assert [r["id"] for r in rows] == TEST_IDS[:answered] and report["programs"]["zero-shot"]["n"] == answered


def test_sigterm_with_threads_starts_no_other_question(tmp_path):
    """Two threads, 1 s a reply: the signal comes with both first questions in flight; those finish, no other one
    is sent (the pool's threads would otherwise answer every question before the process exits)."""
    from fake_openai import FakeOpenAI, serving

    with serving(FakeOpenAI(HOSTED_REPLY)) as fake:
        fake.delay = 1.0
        child = evaluate_in_a_process(tmp_path, fake, "--threads", "2")
        _, stderr = stop_once_asked(child, fake, 2, signal.SIGTERM)
        asked = questions_asked(fake)
    assert child.returncode == 143, stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["partial"]["reason"] == "stopped by SIGTERM" and report["settings"]["threads"] == 2
    assert asked == 2 and report["partial"]["answered"]["zero-shot"] < len(TEST_IDS)


# -- configuration errors end the run: they are no question's failure ------------------------------------------

class MisconfiguredProgram(FixedProgram):
    """A FixedProgram whose every question meets a configuration error, as a rejected Cohere key."""

    def __call__(self, question, history=(), selected_text=""):
        from bookrag.errors import ConfigError

        raise ConfigError("Cohere rejected COHERE_API_KEY (401): check the key")


def test_a_configuration_error_on_a_question_ends_the_run_instead_of_failing_its_row():
    """It was each question's failed row: the run exited 0 with the error in every row of predictions.csv."""
    from bookrag.errors import ConfigError

    with pytest.raises(ConfigError, match=r"Cohere rejected COHERE_API_KEY \(401\)"):
        program_report(MisconfiguredProgram({}), [Question("q", "q", True)], progress=False)


@pytest.mark.parametrize("args", [(), ("--min-combined", "0.9")], ids=["plain", "min-combined"])
def test_an_artifact_whose_gate_needs_the_reranker_exits_2_before_any_question_without_it(workspace, args):
    """Without COHERE_API_KEY it ran every question into the gate's configuration error and exited 0 (5 with
    --min-combined), the error in each row of predictions.csv; ask.py exited 2 at its question."""
    from bookrag.errors import ArtifactError
    from retrievers import BookIndex

    settings = Settings.from_env().replace(book_dir=workspace["book"])
    with BookIndex(settings) as index:
        index.ingest(progress=False)
        program = BookRAG(index.retriever, answer_mode="extractive")
        program.gate.weights["top_rerank"] = 2.0  # as a gate fitted on reranked examples
        manifest = {"bookrag_version": "test", "dspy_version": dspy.__version__, "lm": "local",
                    "embedder": index.embedder.name, "collection": index.collection, "book": str(workspace["book"]),
                    "index_fingerprint": index.fingerprint(), "answer_mode": "extractive",
                    "reranker": {"kind": "cohere", "model": "rerank-v3.5"}}
    artifact = write_artifact(program, workspace["root"] / "artifacts" / "reranked", manifest)

    with pytest.raises(ArtifactError) as caught:
        run_evaluate(workspace, "--program", str(artifact), *args)
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(f"{artifact} has a refusal gate fitted on the rerank scores of the cohere "
                                        "reranker rerank-v3.5, but no reranker is configured: set COHERE_API_KEY")
    assert not workspace["out"].exists()  # no report, no predictions.csv
