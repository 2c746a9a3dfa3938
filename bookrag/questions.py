"""Labeled question sets (CSV via pandas, or JSONL): load, validate, split.

Bad rows raise `DatasetError` naming the file, line and column, so a hand-edited set is easy to fix. What is read
is bounded (a line, a cell, a question): a 300 MB question cell took 2.33 GB and was written twice into the reports.
A question over the bound is refused, not cut: a question file is labeled data, and a cut question is a wrong label.
"""

from __future__ import annotations

import csv
import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bookrag.errors import DatasetError
from bookrag.json_document import DuplicateKey, NestedTooDeep, given_twice, parse_json

COLUMNS = ("id", "question", "answerable", "gold_sources", "key_facts", "reference_answer", "category",
           "history", "selected_text", "split", "style")
REQUIRED = ("id", "question", "answerable")
SPLITS = ("train", "dev", "test")
SPLIT_SEED = "bookrag-split-v1"
# How a question is phrased (datasets/README.md defines each); empty for must-refuse and selected-text rows.
STYLES = ("book-words", "paraphrase", "definition", "how-to", "code-fact", "follow-up", "multi-part")
MAX_QUESTION_CHARS = 20_000  # twice what an answer reads of a question (programs/rag/bounded_question.py)
MAX_CELL_CHARS = 1 << 20  # any CSV cell: a reference answer or a selected passage is a few KB
MAX_LINE_BYTES = 1 << 22  # a JSONL line, all of a row's cells


def follow_up_text(question: str, history) -> str:
    """A follow-up read with the turn before it, that turn's answer included: "Where does it get the robot model
    from?" names nothing the previous question alone may hold, and the answer names what "it" is."""
    if not history:
        return question
    last = history[-1]
    return " ".join(part for part in (last["question"], last.get("answer", ""), question) if part)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answerable: bool
    gold_sources: tuple[str, ...] = ()
    # Each key fact is a string, or a tuple of alternative spellings any one of which counts ("1.2 m", "1.2 meters").
    key_facts: tuple[str | tuple[str, ...], ...] = ()
    reference_answer: str = ""
    category: str = ""
    history: tuple[dict, ...] = ()
    selected_text: str = ""
    split: str = ""
    style: str = ""

    @property
    def search_text(self) -> str:
        """What to retrieve with when no LM rewrites the query (`follow_up_text`)."""
        return follow_up_text(self.question, self.history)

    def to_example(self):
        """A `dspy.Example` whose inputs are what `BookRAG.forward` takes; the labels ride along for metrics."""
        import dspy

        return dspy.Example(
            id=self.id, question=self.question, history=self.history, selected_text=self.selected_text,
            answerable=self.answerable, key_facts=self.key_facts, gold_sources=self.gold_sources,
            reference_answer=self.reference_answer, category=self.category,
        ).with_inputs("question", "history", "selected_text")


def seeded_split(question_id: str) -> str:
    """50% train, 20% dev, 30% test by a seeded hash of the id: stable across runs and machines."""
    h = int(hashlib.sha256(f"{SPLIT_SEED}:{question_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "train" if h < 0.5 else "dev" if h < 0.7 else "test"


def load_questions(path: Path, split: str | None = None) -> list[Question]:
    path = Path(path)
    if path.is_dir():
        raise DatasetError(f"question file {path} is a folder: give a .csv or .jsonl file")
    if not path.is_file():
        raise DatasetError(f"question file {path} does not exist")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = _read_jsonl(path)
    elif path.suffix.lower() == ".csv":
        rows = _read_csv(path)
    else:
        raise DatasetError(f"{path}: use a .csv or .jsonl question file")
    questions, seen = [], {}
    for line, row in rows:
        q = _question(path, line, row)
        if q.id in seen:
            raise DatasetError(f"{path}:{line}: column 'id': duplicate id {q.id!r} (first on line {seen[q.id]})")
        seen[q.id] = line
        questions.append(q)
    if not questions:
        raise DatasetError(f"{path} holds no questions")
    if split is not None:
        if split not in SPLITS + ("all",):
            raise DatasetError(f"split must be one of {', '.join(SPLITS)} or all, got {split!r}")
        questions = [q for q in questions if split == "all" or q.split == split]
    return questions


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    rows = []
    with path.open("rb") as handle:
        for line_no, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if (row := _jsonl_row(path, line_no, raw)) is not None:
                rows.append((line_no, row))
    return rows


def _jsonl_row(path: Path, line_no: int, raw: bytes) -> dict | None:
    """The row of one line (its newline included), None for a blank line."""
    if len(raw) > MAX_LINE_BYTES:
        raise DatasetError(f"{path}:{line_no}: the line is over {MAX_LINE_BYTES:,} bytes; a question's row holds a few "
                           f"KB (its question {MAX_QUESTION_CHARS:,} characters at most)")
    try:
        line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}:{line_no}: not UTF-8 text (byte {exc.start + 1} of the line); re-save the "
                           "file as UTF-8") from None
    if not line.strip():
        return None
    try:
        row = parse_json(line, unique_keys=True)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from None
    except DuplicateKey as exc:
        raise DatasetError(f"{path}:{line_no}: the line {exc}; keep one (which value is the label?)") from None
    except NestedTooDeep:
        raise DatasetError(f"{path}:{line_no}: JSON nested too deeply to read; a question line nests a few "
                           "levels at most") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{path}:{line_no}: each line must be a JSON object")
    return row


def _read_csv(path: Path) -> list[tuple[int, dict]]:
    import pandas as pd

    try:
        lines = _record_lines(path)  # first: pandas would read a row with a cell too many as shifted columns
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise DatasetError(f"{path}: cannot be read as CSV ({exc})") from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}; expected columns: {', '.join(COLUMNS)}")
    return list(zip(lines, frame.to_dict("records")))


def _record_lines(path: Path) -> list[int]:
    """The file line each CSV record starts on (quoted cells may span lines). A record with more cells than the
    header is an error naming its line."""
    lines, previous_end = [], 0
    with path.open(newline="", encoding="utf-8-sig") as handle, _cells_of_at_most(MAX_CELL_CHARS):
        reader = csv.reader(handle)
        try:
            header = next(reader, [])
            if twice := given_twice(header):
                raise DatasetError(f"{path}:1: the header names the column(s) {', '.join(map(repr, twice))} twice; "
                                   "keep one (which one is the label?)")
            previous_end = reader.line_num
            for row in reader:
                if len(row) > len(header):
                    raise DatasetError(f"{path}:{previous_end + 1}: the row has {len(row)} cells where the header "
                                       f"has {len(header)}: quote a cell that holds a comma (\"a, b\"), or add the "
                                       "column to the header")
                if len(row) > 1 or (row and row[0].strip()):  # pandas skips blank (whitespace-only) lines
                    lines.append(previous_end + 1)
                previous_end = reader.line_num
        except csv.Error as exc:  # the csv module's one error here: a cell over the limit
            raise DatasetError(f"{path}:{previous_end + 1}: cannot be read as CSV ({exc}): a cell of a question "
                               f"file holds {MAX_CELL_CHARS:,} characters at most") from None
    return lines


@contextmanager
def _cells_of_at_most(limit: int):
    """The csv module's limit on a cell (128 KiB by default) for the time of a read, so that pandas, which has
    none, reads only a file whose cells are within it; the module-wide limit is put back after."""
    before = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _key_fact(fact, fail) -> str | tuple[str, ...]:
    """A key fact: a string, or a non-empty list of alternative strings (kept as a tuple)."""
    if isinstance(fact, str) and fact.strip():
        return fact
    if isinstance(fact, list) and fact and all(isinstance(a, str) and a.strip() for a in fact):
        return tuple(fact)
    fail("key_facts", f'each key fact is a string or a list of alternatives like ["1.2 m", "1.2 meters"], got {fact!r}')


def _json_shown(value) -> str:
    """A JSON value as the file may have written it (1e400 reads as Infinity), cut short."""
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:60] + "..."


def _question(path: Path, line: int, row: dict) -> Question:
    def fail(column: str, problem: str):
        raise DatasetError(f"{path}:{line}: column {column!r}: {problem}")

    def text(column: str) -> str:
        value = row.get(column)
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int)):  # JSONL's NaN, Infinity, 1e400 ("inf")
            fail(column, f"expected text or a whole number, got {_json_shown(value)}: write it in quotes")
        return str(value).strip()

    def json_list(column: str) -> tuple:
        value = row.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            return ()
        if isinstance(value, str):
            try:
                value = parse_json(value, unique_keys=True)
            except json.JSONDecodeError:
                fail(column, f"expected a JSON array like [\"a\", \"b\"], got {value[:60]!r}")
            except DuplicateKey as exc:
                fail(column, f"the cell {exc}: keep one")
            except NestedTooDeep:
                fail(column, f"expected a JSON array like [\"a\", \"b\"], got one nested too deeply to read "
                             f"({value[:20]!r}...)")
        if not isinstance(value, list):
            fail(column, f"expected a JSON array, got {type(value).__name__}")
        return tuple(value)

    qid, question = text("id"), text("question")
    if not qid:
        fail("id", "empty id")
    if not question:
        fail("question", "empty question")
    if len(question) > MAX_QUESTION_CHARS:
        fail("question", f"{len(question):,} characters, over the {MAX_QUESTION_CHARS:,} a question may hold (an "
                         "answer reads its first 500 words): shorten it")
    answerable = row.get("answerable")
    if isinstance(answerable, str):
        lowered = answerable.strip().lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no"):
            fail("answerable", f"expected true or false, got {answerable!r}")
        answerable = lowered in ("true", "1", "yes")
    elif not isinstance(answerable, bool):
        fail("answerable", f"expected true or false, got {answerable!r}")
    gold, facts, history = json_list("gold_sources"), json_list("key_facts"), json_list("history")
    if not all(isinstance(x, str) for x in gold):
        fail("gold_sources", "list items must be strings")
    facts = tuple(_key_fact(f, fail) for f in facts)
    for turn in history:
        if not (isinstance(turn, dict) and isinstance(turn.get("question"), str) and
                isinstance(turn.get("answer", ""), str)):
            fail("history", 'each turn must be an object like {"question": "...", "answer": "..."}')
    split = text("split") or seeded_split(qid)
    if split not in SPLITS:
        fail("split", f"expected one of {', '.join(SPLITS)}, got {split!r}")
    style = text("style")
    if style and style not in STYLES:
        fail("style", f"expected one of {', '.join(STYLES)} or empty, got {style!r}")
    return Question(qid, question, answerable, gold, facts, text("reference_answer"), text("category"),
                    history, text("selected_text"), split, style)
