"""Evaluation report files: `report.json` and `predictions.csv`, each written atomically (a temp name in the same
folder, then `os.replace`), so a killed run never leaves a half-written file behind."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bookrag.atomic_file import atomic_write
from bookrag.output_folder import OutputKind
from programs.evaluate.figures import QUESTION_FIGURES

REPORT_FILE = "report.json"
REPORT_OUTPUT = OutputKind("evaluation report", REPORT_FILE, ("settings", "programs"))
# Who and what was asked and what the program did, then the per-question figures, then the error if it failed.
PREDICTION_COLUMNS = ("program", "id", "category", "style", "question", "answerable", "refused", "refusal_reason", "mode",
                      "answer", "cited_sources", "cited_text", "gold_sources", "gate_probability", "gate_threshold", "top_dense",
                      *QUESTION_FIGURES, "error")
# A cell a spreadsheet reads as a formula (`=HYPERLINK(...)` in a question runs when the file is opened): OWASP's
# "CSV injection" list of first characters. Such a cell gets a leading `'`, which spreadsheets read as "text".
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NO_CITED_TEXT = "(no cited text)"  # a citation whose passage holds nothing the answer says


def write_report_json(path: Path, settings: dict, reports: dict[str, dict], partial: dict | None = None) -> Path:
    """`partial`: why the run stopped and how many questions each program finished; false for a whole run."""
    document = {"settings": settings, "partial": partial or False, "programs": reports}
    return atomic_write(path, lambda temp: temp.write_text(json.dumps(document, indent=2, default=str) + "\n",
                                                           encoding="utf-8"))


def write_predictions_csv(path: Path, reports: dict[str, dict]) -> Path:
    """One row per question per program."""

    def write(temp: Path) -> None:
        with temp.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=PREDICTION_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            for name, report in reports.items():
                for row in report["rows"]:
                    cells = {
                        **row, "program": name, "cited_sources": "; ".join(dict.fromkeys(row["cited_sources"])),
                        "cited_text": cited_text_cell(row["cited_text"]),
                        "gold_sources": "; ".join(row["gold_sources"]),
                        "result": "error" if row["error"] else "pass" if row["passed"] else "fail",
                    }
                    writer.writerow({column: as_text_cell(value) for column, value in cells.items()})

    return atomic_write(path, write)


def cited_text_cell(cited_text: list[str | None]) -> str:
    """Each citation's cited text on a line of its own, in citation order."""
    return "\n".join(" ".join(text.split()) if text is not None else NO_CITED_TEXT for text in cited_text)


def as_text_cell(value):
    """`value`, or a text that a spreadsheet would run as a formula, with a leading `'` (numbers stay numbers)."""
    return f"'{value}" if isinstance(value, str) and value.startswith(_FORMULA_START) else value
