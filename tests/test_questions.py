"""Labeled question sets: CSV and JSONL loading, validation errors that name the line and column, splits."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from bookrag.errors import DatasetError
from bookrag.questions import STYLES, Question, load_questions, seeded_split
from programs.evaluate.metrics import fact_present, normalize

DATASETS = PROJECT_ROOT / "datasets"


def shared_corpus(name: str) -> Path:
    """A shared book: `../shared/corpora/<name>` beside a checkout, found from a git worktree nested deeper too."""
    for parent in PROJECT_ROOT.parents:
        if (parent / "shared" / "corpora" / name).is_dir():
            return parent / "shared" / "corpora" / name
    return PROJECT_ROOT.parent / "shared" / "corpora" / name


BOOK_A = shared_corpus("physical-ai-book-a")

HEADER = "id,question,answerable,gold_sources,key_facts,reference_answer,category,history,selected_text,split"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def csv_file(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    return write(tmp_path, "questions.csv", "\n".join([header, *rows]) + "\n")


def test_csv_rows_load_into_questions(tmp_path):
    path = csv_file(
        tmp_path,
        'q1,How tall is Kestrel?,true,"[""intro.md""]","[""1.2 m""]",Kestrel is 1.2 m tall.,factual,[],,train',
        'q2,What does it cost?,false,[],[],,out-of-scope,[],,',
        'q3,And its mass?,yes,"[""intro.md""]",[],,follow-up,'
        '"[{""question"": ""How tall is Kestrel?"", ""answer"": ""1.2 m""}]",,test',
    )
    q1, q2, q3 = load_questions(path)
    assert q1 == Question("q1", "How tall is Kestrel?", True, ("intro.md",), ("1.2 m",), "Kestrel is 1.2 m tall.",
                          "factual", (), "", "train")
    assert (q2.answerable, q2.gold_sources, q2.key_facts, q2.split) == (False, (), (), seeded_split("q2"))
    assert q3.answerable is True
    assert q3.history == ({"question": "How tall is Kestrel?", "answer": "1.2 m"},)
    assert q3.search_text == "How tall is Kestrel? 1.2 m And its mass?"  # the previous turn, its answer included
    assert q1.search_text == "How tall is Kestrel?"


def test_csv_needs_only_the_required_columns(tmp_path):
    path = csv_file(tmp_path, "q1,What is ROS 2?,TRUE", "q2,Is it slow?,0", header="id,question,answerable")
    q1, q2 = load_questions(path)
    assert (q1.answerable, q2.answerable) == (True, False)
    assert q1.gold_sources == () and q1.split in ("train", "dev", "test")


def test_jsonl_lines_load_with_native_lists_or_json_strings(tmp_path):
    rows = [
        {"id": "j1", "question": "What is a node?", "answerable": True, "gold_sources": ["a.md"],
         "key_facts": ["a process"], "category": "factual", "split": "dev"},
        {"id": "j2", "question": "Is it red?", "answerable": "false", "gold_sources": "[]", "history": []},
    ]
    path = write(tmp_path, "q.jsonl", json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    j1, j2 = load_questions(path)
    assert (j1.id, j1.answerable, j1.gold_sources, j1.key_facts, j1.split) == ("j1", True, ("a.md",),
                                                                                ("a process",), "dev")
    assert (j2.answerable, j2.gold_sources) == (False, ())


@pytest.mark.parametrize("missing", ["id", "question", "answerable"])
def test_csv_missing_a_required_column_names_it(tmp_path, missing):
    columns = [c for c in ("id", "question", "answerable", "category") if c != missing]
    path = csv_file(tmp_path, ",".join(["x"] * len(columns)), header=",".join(columns))
    with pytest.raises(DatasetError, match=f"missing column\\(s\\) {missing};") as info:
        load_questions(path)
    assert str(path) in str(info.value)


def test_jsonl_row_without_a_question_names_the_column_and_line(tmp_path):
    path = write(tmp_path, "q.jsonl", '{"id": "a", "question": "Fine?", "answerable": true}\n'
                                      '{"id": "b", "answerable": true}\n')
    with pytest.raises(DatasetError, match=r"q\.jsonl:2: column 'question': empty question"):
        load_questions(path)


def test_bad_json_list_names_the_line_and_column(tmp_path):
    path = csv_file(
        tmp_path,
        'q1,Fine?,true,"[""a.md""]",[],,,[],,',
        'q2,Broken?,true,"[""a.md"", oops]",[],,,[],,',
    )
    with pytest.raises(DatasetError, match=r"questions\.csv:3: column 'gold_sources': expected a JSON array"):
        load_questions(path)


def test_json_value_that_is_not_a_list_is_an_error(tmp_path):
    path = csv_file(tmp_path, 'q1,Fine?,true,"{""a"": 1}",[],,,[],,')
    with pytest.raises(DatasetError, match="column 'gold_sources': expected a JSON array, got dict"):
        load_questions(path)


def test_line_numbers_count_multiline_cells_and_blank_lines(tmp_path):
    path = csv_file(
        tmp_path,
        'q1,"A question\nthat spans\nthree lines?",true,[],[],,,[],,',
        "",
        'q2,Fine?,true,[],[],,,[],,',
        'q3,Bad?,true,[],"not json",,,[],,',
    )
    with pytest.raises(DatasetError, match=r"questions\.csv:7: column 'key_facts'"):
        load_questions(path)


def test_a_key_fact_may_be_a_list_of_alternatives(tmp_path):
    path = csv_file(tmp_path, 'q1,Tall?,true,[],"[[""1.2 m"", ""1.2 meters""], ""24 kg""]",,,[],,')
    assert load_questions(path)[0].key_facts == (("1.2 m", "1.2 meters"), "24 kg")


@pytest.mark.parametrize("facts", ['"[[]]"', '"[1]"', '"[[""a"", 2]]"', '"[""""]"'])
def test_a_key_fact_that_is_neither_text_nor_alternatives_is_an_error(tmp_path, facts):
    path = csv_file(tmp_path, f"q1,Tall?,true,[],{facts},,,[],,")
    with pytest.raises(DatasetError, match="column 'key_facts': each key fact is a string or a list of alternatives"):
        load_questions(path)


def test_invalid_jsonl_line_names_the_line(tmp_path):
    path = write(tmp_path, "q.jsonl", '{"id": "a", "question": "Q?", "answerable": true}\n{"id": "b",\n')
    with pytest.raises(DatasetError, match=r"q\.jsonl:2: not valid JSON"):
        load_questions(path)
    path = write(tmp_path, "q.jsonl", '["a", "list"]\n')
    with pytest.raises(DatasetError, match=r"q\.jsonl:1: each line must be a JSON object"):
        load_questions(path)


def test_jsonl_line_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"id": "a", "question": "Q?", "answerable": true}\n\n'
                     b'{"id": "b", "question": "How tall is \xff Kestrel?", "answerable": true}\n')
    with pytest.raises(DatasetError, match=r"q\.jsonl:3: not UTF-8 text \(byte 38 of the line\)"):
        load_questions(path)


def test_duplicate_ids_are_an_error_naming_both_lines(tmp_path):
    path = csv_file(tmp_path, "q1,First?,true,[],[],,,[],,", "q2,Second?,true,[],[],,,[],,",
                    "q1,Again?,false,[],[],,,[],,")
    with pytest.raises(DatasetError, match=r"questions\.csv:4: column 'id': duplicate id 'q1' \(first on line 2\)"):
        load_questions(path)


@pytest.mark.parametrize("value", ["maybe", "", "2"])
def test_bad_answerable_value_is_an_error(tmp_path, value):
    path = csv_file(tmp_path, f"q1,Question?,{value},[],[],,,[],,")
    with pytest.raises(DatasetError, match=r"questions\.csv:2: column 'answerable': expected true or false"):
        load_questions(path)


def test_bad_split_value_and_bad_history_turn_are_errors(tmp_path):
    with pytest.raises(DatasetError, match="column 'split': expected one of train, dev, test, got 'validation'"):
        load_questions(csv_file(tmp_path, "q1,Question?,true,[],[],,,[],,validation"))
    with pytest.raises(DatasetError, match="column 'history': each turn must be an object"):
        load_questions(csv_file(tmp_path, 'q1,Question?,true,[],[],,,"[""just text""]",,'))
    with pytest.raises(DatasetError, match="list items must be strings"):
        load_questions(csv_file(tmp_path, "q1,Question?,true,[1],[],,,[],,"))


def test_empty_id_or_question_is_an_error(tmp_path):
    with pytest.raises(DatasetError, match="column 'id': empty id"):
        load_questions(csv_file(tmp_path, " ,Question?,true,[],[],,,[],,"))
    with pytest.raises(DatasetError, match="column 'question': empty question"):
        load_questions(csv_file(tmp_path, "q1,,true,[],[],,,[],,"))


def test_unusable_files_are_dataset_errors(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_questions(tmp_path / "nope.csv")
    with pytest.raises(DatasetError, match="use a .csv or .jsonl"):
        load_questions(write(tmp_path, "q.txt", "id,question,answerable\n"))
    with pytest.raises(DatasetError, match="holds no questions"):
        load_questions(csv_file(tmp_path, header="id,question,answerable"))
    with pytest.raises(DatasetError, match="cannot be read as CSV"):
        load_questions(write(tmp_path, "empty.csv", ""))


def test_a_folder_given_as_the_question_file_says_it_is_a_folder(tmp_path):
    (tmp_path / "questions.csv").mkdir()
    with pytest.raises(DatasetError) as caught:
        load_questions(tmp_path / "questions.csv")
    assert str(caught.value) == f"question file {tmp_path / 'questions.csv'} is a folder: give a .csv or .jsonl file"


@pytest.mark.parametrize("rows", [
    ["q1,What is a node?,true", "q2,What is a topic, really?,true"],  # one row with a cell too many
    ["q1,What is a node, really?,true", "q2,What is a topic, really?,true"],  # every row (pandas: an index column)
])
def test_a_csv_row_with_more_cells_than_the_header_names_the_row_and_the_counts(tmp_path, rows):
    path = csv_file(tmp_path, *rows, header="id,question,answerable")
    with pytest.raises(DatasetError) as caught:
        load_questions(path)
    line = 2 if "node, really" in rows[0] else 3
    assert str(caught.value).startswith(f"{path}:{line}: the row has 4 cells where the header has 3: quote a cell "
                                        "that holds a comma")


def jsonl_file(tmp_path: Path, *rows) -> Path:
    """A JSONL file of `rows`: dicts, or lines as written."""
    return write(tmp_path, "questions.jsonl", "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def test_a_question_over_20000_characters_is_refused_naming_its_line_and_column(tmp_path):
    """Refused, not cut: a question file is labeled data, and a cut question would be a wrong label."""
    longest, longer = "x" * 20_000, "How tall is Kestrel? " + "x" * 20_000
    path = csv_file(tmp_path, f"q1,{longest},true", f"q2,{longer},true", header="id,question,answerable")
    jsonl = jsonl_file(tmp_path, {"id": "q1", "question": longest, "answerable": True},
                       {"id": "q2", "question": longer, "answerable": True})
    for file, line in ((path, 3), (jsonl, 2)):
        with pytest.raises(DatasetError) as caught:
            load_questions(file)
        assert str(caught.value) == (f"{file}:{line}: column 'question': 20,021 characters, over the 20,000 a question "
                                     "may hold (an answer reads its first 500 words): shorten it")
    assert load_questions(csv_file(tmp_path, f"q1,{longest},true", header="id,question,answerable"))[0].question \
        == longest


def test_a_cell_or_line_of_10_mb_is_refused_naming_its_line_and_the_limit(tmp_path):
    """A 300 MB question cell took 2.33 GB and went whole into the reports: the csv module now stops at its limit
    (1 MiB; it was raised to the file's size), a JSONL line is read up to 4 MiB."""
    huge = "How tall is Kestrel? " + "x" * 10_000_000
    path = csv_file(tmp_path, "q1,Is it slow?,false", f"q2,{huge},true", header="id,question,answerable")
    jsonl = jsonl_file(tmp_path, {"id": "q1", "question": "Is it slow?", "answerable": False},
                       {"id": "q2", "question": huge, "answerable": True})
    limit = csv.field_size_limit()
    with pytest.raises(DatasetError) as caught:
        load_questions(path)
    assert str(caught.value) == (f"{path}:3: cannot be read as CSV (field larger than field limit (1048576)): a cell "
                                 "of a question file holds 1,048,576 characters at most")
    assert csv.field_size_limit() == limit  # the module-wide limit is put back
    with pytest.raises(DatasetError) as caught:
        load_questions(jsonl)
    assert str(caught.value) == (f"{jsonl}:2: the line is over 4,194,304 bytes; a question's row holds a few KB (its "
                                 "question 20,000 characters at most)")


@pytest.mark.parametrize("column, written, shown", [
    ("id", "NaN", "NaN"), ("id", "Infinity", "Infinity"), ("id", "1e400", "Infinity"), ("id", "1.5", "1.5"),
    ("id", "true", "true"), ("question", "NaN", "NaN"), ("question", '["What?"]', '["What?"]'),
    ("reference_answer", "-Infinity", "-Infinity"),
])
def test_a_jsonl_value_that_is_not_text_is_refused_naming_its_line_and_column(tmp_path, column, written, shown):
    """NaN was read as the id and question "nan", and Infinity and 1e400 as the same id "inf"."""
    row = {"id": '"q2"', "question": '"What is a node?"', "answerable": "true"} | {column: written}
    path = jsonl_file(tmp_path, {"id": "q1", "question": "Is it slow?", "answerable": False},
                      "{" + ", ".join(f'"{key}": {value}' for key, value in row.items()) + "}")
    with pytest.raises(DatasetError) as caught:
        load_questions(path)
    assert str(caught.value) == (f"{path}:2: column {column!r}: expected text or a whole number, got {shown}: write "
                                 "it in quotes")


def test_a_jsonl_whole_number_id_is_read_as_its_digits(tmp_path):
    path = jsonl_file(tmp_path, {"id": 7, "question": "Is it slow?", "answerable": False})
    assert load_questions(path)[0].id == "7"


def test_a_history_answer_that_is_not_text_is_refused(tmp_path):
    """It reached the follow-up's search text, and joining it failed (exit 70)."""
    path = jsonl_file(tmp_path, {"id": "q1", "question": "And its height?", "answerable": True,
                                 "history": [{"question": "What is Kestrel?", "answer": float("nan")}]})
    with pytest.raises(DatasetError, match=r"questions\.jsonl:1: column 'history': each turn must be an object"):
        load_questions(path)


def test_split_filter_selects_rows_and_rejects_unknown_splits(tmp_path):
    path = csv_file(tmp_path, "a,A?,true,[],[],,,[],,train", "b,B?,true,[],[],,,[],,test",
                    "c,C?,true,[],[],,,[],,test")
    assert [q.id for q in load_questions(path, split="test")] == ["b", "c"]
    assert [q.id for q in load_questions(path, split="train")] == ["a"]
    assert len(load_questions(path, split="all")) == 3
    with pytest.raises(DatasetError, match="split must be one of"):
        load_questions(path, split="holdout")


def test_seeded_split_is_deterministic_and_roughly_50_20_30():
    ids = [f"q-{i:04d}" for i in range(3000)]
    splits = [seeded_split(i) for i in ids]
    assert splits == [seeded_split(i) for i in ids]
    assert seeded_split("p1-001") == seeded_split("p1-001")
    share = {k: v / len(ids) for k, v in Counter(splits).items()}
    assert share["train"] == pytest.approx(0.5, abs=0.03)
    assert share["dev"] == pytest.approx(0.2, abs=0.03)
    assert share["test"] == pytest.approx(0.3, abs=0.03)


def test_bundled_humanoid_primer_questions_load_and_match_the_bundled_book():
    questions = load_questions(DATASETS / "humanoid-primer.csv")
    assert len(questions) > 100
    assert {q.split for q in questions} == {"train", "dev", "test"}
    assert {True, False} == {q.answerable for q in questions}
    book = DATASETS / "humanoid-primer"
    for q in questions:
        if not q.answerable:
            assert not q.gold_sources and not q.key_facts, q.id
            continue
        assert all((book / g).is_file() for g in q.gold_sources), q.id
        source_text = " ".join((book / g).read_text(encoding="utf-8") for g in q.gold_sources) + q.selected_text
        assert all(fact_present(f, source_text) for f in q.key_facts), q.id


def test_bundled_book_a_questions_load():
    questions = load_questions(DATASETS / "physical-ai-book-a.csv")
    assert len(questions) > 100
    assert len(load_questions(DATASETS / "physical-ai-book-a.csv", split="test")) > 10
    if BOOK_A.is_dir():
        missing = {g for q in questions for g in q.gold_sources if not (BOOK_A / g).is_file()}
        assert missing == set()


# The last id of each series before the phrasing-style rows of issue 33 (p2-121 and r-050 onward).
HUMANOID_LAST_BEFORE_STYLES = {"p1": 144, "p2": 120, "r": 49}


def test_humanoid_primer_explicit_splits_keep_the_seeded_assignment_and_add_only_dev_rows():
    """The explicit split column reproduces the seeded split of every original row; the rows added before the style
    sets are dev only, so none of them moved into or out of test. The style rows carry their own explicit splits."""
    questions = load_questions(DATASETS / "humanoid-primer.csv")
    series = [(q, *q.id.split("-")) for q in questions]
    before = [q for q, prefix, number in series if int(number) <= HUMANOID_LAST_BEFORE_STYLES[prefix]]
    assert all(q.split == "dev" for q in before if q.split != seeded_split(q.id))
    assert sum(q.split == "test" for q in before) == 90
    assert all(q.style not in ("", "book-words") or not q.answerable for q in questions if q not in before)


FASTAPI = shared_corpus("fastapi-tutorial")
BOOK_B = shared_corpus("physical-ai-book-b")


def test_the_fastapi_questions_load_with_every_split_and_a_third_must_refuse():
    questions = load_questions(DATASETS / "fastapi-tutorial.csv")
    assert len(questions) >= 60 and {q.split for q in questions} == {"train", "dev", "test"}
    assert 0.3 <= sum(not q.answerable for q in questions) / len(questions) <= 0.4
    assert {"near-miss", "out-of-scope", "injection"} <= {q.category for q in questions if not q.answerable}


@pytest.mark.parametrize("questions, book", [("physical-ai-book-a.csv", BOOK_A), ("fastapi-tutorial.csv", FASTAPI),
                                             ("physical-ai-book-b-heldout.csv", BOOK_B)])
def test_every_key_fact_of_a_shared_book_is_in_its_gold_sources(questions, book):
    if not book.is_dir():
        pytest.skip(f"the shared {book.name} is not beside the project")
    for q in load_questions(DATASETS / questions):
        if not q.answerable:
            assert not q.gold_sources and not q.key_facts, q.id
            continue
        source_text = " ".join((book / g).read_text(encoding="utf-8") for g in q.gold_sources) + q.selected_text
        assert all(fact_present(f, source_text) for f in q.key_facts), q.id


STYLE_HEADER = HEADER + ",style"


def test_the_style_column_is_read_and_may_be_empty_or_missing(tmp_path):
    path = csv_file(tmp_path, 'q1,What does it weigh?,true,[],[],,factual,[],,dev,paraphrase',
                    "q2,Is it red?,false,[],[],,near-miss,[],,dev,", header=STYLE_HEADER)
    assert [q.style for q in load_questions(path)] == ["paraphrase", ""]
    assert load_questions(csv_file(tmp_path, "q1,Question?,true,[],[],,,[],,"))[0].style == ""


def test_a_style_outside_the_list_is_refused_naming_the_row_and_column(tmp_path):
    path = csv_file(tmp_path, "q1,Fine?,true,[],[],,,[],,dev,how-to", "q2,Odd?,true,[],[],,,[],,dev,reworded",
                    header=STYLE_HEADER)
    with pytest.raises(DatasetError, match=r"questions\.csv:3: column 'style': expected one of book-words, "
                                           r"paraphrase, .* or empty, got 'reworded'"):
        load_questions(path)


LABELED_SETS = ("humanoid-primer.csv", "physical-ai-book-a.csv", "fastapi-tutorial.csv")


@pytest.mark.parametrize("questions", LABELED_SETS)
def test_every_row_of_a_labeled_set_has_a_style_by_the_documented_rule(questions):
    """datasets/README.md: must-refuse and selected-text rows have no style, the follow-up and multi-part categories
    are their styles, every other answerable row has a style; follow-ups carry the turn they follow."""
    for q in load_questions(DATASETS / questions):
        if not q.answerable or q.category == "selected-text":
            assert q.style == "", q.id
        elif q.category in ("follow-up", "multi-part"):
            assert q.style == q.category, q.id
        else:
            assert q.style in STYLES and q.style not in ("follow-up", "multi-part"), q.id
        if q.style == "follow-up":
            assert q.history, q.id


def test_each_phrasing_style_has_enough_dev_and_test_questions_pooled_over_the_labeled_sets():
    """At least 15 dev and 15 test answerable questions per non-default style, so one question moves a score per
    style by at most about 7 points."""
    questions = [q for name in LABELED_SETS for q in load_questions(DATASETS / name)]
    counts = Counter((q.style, q.split) for q in questions if q.answerable)
    for style in STYLES[1:]:
        assert counts[(style, "dev")] >= 15 and counts[(style, "test")] >= 15, style


READER_TRAINING = DATASETS / "reader-training"


@pytest.mark.parametrize("questions, book", [("humanoid-primer.csv", DATASETS / "humanoid-primer"),
                                             ("physical-ai-book-a.csv", BOOK_A), ("fastapi-tutorial.csv", FASTAPI)])
def test_a_reader_training_set_is_train_only_grounded_and_asks_no_fact_of_a_dev_or_test_row(questions, book):
    """The shipped reader trains on these (train_reader.py): every row train, every key fact verbatim in its gold
    sources and in its reference answer, and no key fact of a dev or test row of the same file asked again."""
    if not book.is_dir():
        pytest.skip(f"the shared {book.name} is not beside the project")
    rows = load_questions(READER_TRAINING / questions)
    assert {q.split for q in rows} == {"train"} and {True, False} == {q.answerable for q in rows}
    held_out = {(g, normalize(alternative)) for q in load_questions(DATASETS / questions) if q.split != "train"
                for g in q.gold_sources for f in q.key_facts for alternative in ((f,) if isinstance(f, str) else f)}
    for q in rows:
        if not q.answerable:
            assert not q.gold_sources and not q.key_facts and not q.reference_answer, q.id
            continue
        source_text = " ".join((book / g).read_text(encoding="utf-8") for g in q.gold_sources)
        assert all(fact_present(f, source_text) and fact_present(f, q.reference_answer) for f in q.key_facts), q.id
        asked = {(g, normalize(a)) for g in q.gold_sources for f in q.key_facts for a in ((f,) if isinstance(f, str) else f)}
        assert not asked & held_out, q.id


def test_a_jsonl_line_giving_a_key_twice_is_refused_naming_it(tmp_path):
    """Python's reader kept the last value silently: which one is the label?"""
    path = write(tmp_path, "q.jsonl", '{"id": "a", "question": "Q?", "answerable": true}\n'
                                      '{"id": "b", "question": "Q?", "answerable": true, "answerable": false}\n')
    with pytest.raises(DatasetError, match=r"q\.jsonl:2: the line gives the key 'answerable' twice"):
        load_questions(path)


def test_a_history_cell_giving_a_key_twice_is_refused_naming_its_column(tmp_path):
    history = '"[{""question"": ""A?"", ""answer"": ""x"", ""answer"": ""y""}]"'
    path = csv_file(tmp_path, f'q1,Q?,true,[],[],,,{history},,train')
    with pytest.raises(DatasetError, match=r"column 'history': the cell gives the key 'answer' twice"):
        load_questions(path)


def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path):
    """pandas renamed the second `answerable` to `answerable.1` and read the first, silently."""
    path = csv_file(tmp_path, "q1,Q?,true,[],[],,,,,train,false", header=HEADER + ",answerable")
    with pytest.raises(DatasetError, match=r"questions\.csv:1: the header names the column\(s\) 'answerable' twice"):
        load_questions(path)
