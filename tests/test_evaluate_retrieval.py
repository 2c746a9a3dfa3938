"""`python evaluate.py --retrieval-only ... --json` end to end in a subprocess, with the real MiniLM embedder."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_ROOT, SMALL_BOOK, clean_env, run_script, write_book

from bookrag.questions import Question
from programs.evaluate.metrics import first_gold_rank, recall_at_k, reciprocal_rank
from programs.evaluate.reports import percentile, retrieval_questions
from retrievers.passage import Passage

QUESTIONS = """\
id,question,answerable,gold_sources,key_facts,reference_answer,category,history,selected_text
t-1,What does Gazebo simulate?,true,"[""02-sim/01-gazebo.md""]",[],,factual,[],
t-2,Which reliability profile keeps messages when the network drops packets?,true,"[""01-ros2/01-nodes.md""]",[],,factual,[],
t-3,How can I start many nodes at once with their parameters?,true,"[""01-ros2/02-launch.md""]",[],,procedural,[],
t-4,What is the price of the robot?,false,[],[],,out-of-scope,[],
t-5,What does this say?,true,"[""intro.md""]",[],,selected-text,[],Some selected words.
"""


def env_for(tmp_path):
    return clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"))


@pytest.mark.slow
def test_retrieval_only_json_prints_one_json_object_with_the_metrics(tmp_path):
    book = write_book(tmp_path / "tiny-book", SMALL_BOOK)
    questions = tmp_path / "questions.csv"
    questions.write_text(QUESTIONS, encoding="utf-8")

    result = run_script("evaluate.py", "--retrieval-only", "--book", book, "--questions", questions,
                        "--top-k", "2", "--json", cwd=tmp_path, env=env_for(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1  # one line, nothing else
    report = json.loads(result.stdout)
    assert isinstance(report, dict)
    assert report["n"] == 3  # unanswerable and selected-text questions are not retrieval questions
    assert (report["k"], report["mode"], report["mmr"]) == (2, "hybrid", False)
    assert report["recall_at_k"] == 1.0
    assert 0.5 <= report["mrr"] <= 1.0
    assert set(report["per_category"]) == {"factual", "procedural"}
    assert report["collection"].startswith("tiny-book-") and report["collection"].endswith("__minilm384")
    assert report["latency_p95_ms"] >= report["latency_p50_ms"] > 0
    assert (tmp_path / "data" / "qdrant" / report["collection"]).is_dir()
    assert (tmp_path / "data" / "embedding-cache.sqlite").is_file()


def test_malformed_question_file_exits_4_naming_the_problem(tmp_path):
    book = write_book(tmp_path / "tiny-book", SMALL_BOOK)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,question\nq1,What?\n", encoding="utf-8")
    result = run_script("evaluate.py", "--retrieval-only", "--book", book, "--questions", bad, "--json",
                        cwd=tmp_path, env=env_for(tmp_path))
    assert result.returncode == 4, result.stderr
    assert result.stdout == ""
    assert str(bad) in result.stderr and "missing column(s) answerable" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "qdrant").exists()  # failed before touching the index


@pytest.mark.parametrize(("args", "message"), [
    (["--retrieval-only", "--top-k", "0"], "argument --top-k: must be between 1 and 50, got 0"),
    (["--retrieval-only", "--mode", "fuzzy"], "invalid choice: 'fuzzy'"),
])
def test_bad_arguments_exit_4(tmp_path, args, message):
    result = run_script("evaluate.py", *args, "--questions", PROJECT_ROOT / "datasets" / "humanoid-primer.csv",
                        cwd=tmp_path, env=env_for(tmp_path))
    assert result.returncode == 4, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


# -- the metrics the report is built from ------------------------------------------------------------------


def passage(source: str) -> Passage:
    return Passage(id=source, score=1.0, text="", title="", heading="", module="", source=source, url="")


def test_recall_and_reciprocal_rank_use_the_first_gold_passage():
    ranked = [passage("a.md"), passage("b.md"), passage("c.md")]
    assert first_gold_rank(ranked, ["c.md", "b.md"]) == 2
    assert recall_at_k(ranked, ["c.md"], 3) == 1.0
    assert recall_at_k(ranked, ["c.md"], 2) == 0.0
    assert reciprocal_rank(ranked, ["c.md"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranked, ["z.md"]) == 0.0 and first_gold_rank([], ["a.md"]) is None


def test_retrieval_questions_keep_answerable_questions_with_gold_and_no_selection():
    qs = [Question("a", "Q?", True, ("a.md",)), Question("b", "Q?", False), Question("c", "Q?", True),
          Question("d", "Q?", True, ("a.md",), selected_text="picked")]
    assert [q.id for q in retrieval_questions(qs)] == ["a"]


def test_percentile_picks_the_nearest_rank():
    assert percentile([], 50) == 0.0
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
