"""optimize.py and the compile flow: gate calibration, teleprompters with DummyLM, the artifact round trip."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import clean_env, run_script, write_book

from bookrag.questions import load_questions
from programs.compile.artifact import load_program, read_manifest, write_artifact
from programs.compile.compiler import compile_program
from programs.compile.optimizers import OptimizerSettings, labeled_demos
from programs.evaluate.reports import program_report
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import choose_gate

# (id, question, answerable, gold source, key fact, the dummy LM's answer, split)
QUESTIONS = [
    ("a1", "Which reliability profile keeps messages when the network drops packets?", True,
     "01-ros2/01-nodes.md", "zephyrine", "The zephyrine reliability profile keeps them.", "train"),
    ("a2", "What do launch files start at once?", True, "01-ros2/02-launch.md", "many nodes",
     "Launch files start many nodes at once.", "train"),
    ("a3", "What physics does Gazebo simulate?", True, "02-sim/01-gazebo.md", "rigid body physics",
     "Gazebo simulates rigid body physics.", "train"),
    ("a4", "What do simulated cameras and lidar sensors publish?", True, "02-sim/01-gazebo.md",
     "noisy measurements", "They publish noisy measurements.", "train"),
    ("a5", "What is a node in this primer?", True, "01-ros2/01-nodes.md", "performs computation",
     "A node is a process that performs computation.", "dev"),
    ("a6", "Who should read the primer, and what should they know?", True, "intro.md", "Linux shell",
     "Readers comfortable with a Linux shell.", "dev"),
    ("r1", "What is the capital city of France?", False, "", "", "", "train"),
    ("r2", "Who won the 2018 football world cup final?", False, "", "", "", "train"),
    ("r3", "What is the boiling point of liquid mercury?", False, "", "", "", "dev"),
    ("r4", "How do I bake a sourdough bread loaf?", False, "", "", "", "dev"),
]


def write_questions(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "answerable", "gold_sources", "key_facts", "reference_answer",
                         "category", "split"])
        for qid, question, answerable, gold, fact, answer, split in QUESTIONS:
            writer.writerow([qid, question, str(answerable).lower(), json.dumps([gold] if gold else []),
                             json.dumps([fact] if fact else []), answer, "factual" if answerable else "refuse",
                             split])
    return path


def dummy_lm():
    """Answers each answerable question with its fact (citing passage 1); says unanswerable to the rest."""
    from dspy.utils import DummyLM

    replies = {}
    for _, question, answerable, _, _, answer, _ in QUESTIONS:
        replies[question] = ({"reasoning": "The passages say so.", "answer": answer, "citations": [1],
                              "answerable": True} if answerable else
                             {"reasoning": "Not in the passages.", "answer": "", "citations": [],
                              "answerable": False})
    return DummyLM(replies)


@pytest.fixture
def questions(tmp_path):
    return load_questions(write_questions(tmp_path / "questions.csv"))


def split(questions, name):
    return [q for q in questions if q.split == name]


def test_choose_gate_fits_on_train_and_reports_every_candidate_on_dev(small_index, questions):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    gate = choose_gate(program, split(questions, "train"), split(questions, "dev"), progress=False)
    assert set(gate["candidates"]) == {"cosine-cut", "default", "logistic"}
    assert gate["chosen"] in gate["candidates"]
    assert program.gate.calibrated and program.gate.threshold == gate["threshold"]
    for figures in gate["candidates"].values():
        assert 0.0 <= figures["refusal_recall"] <= 1.0 and 0.0 <= figures["false_refusal_rate"] <= 1.0


def test_choose_gate_needs_both_labels_in_train(small_index, questions):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    only_answerable = [q for q in split(questions, "train") if q.answerable]
    with pytest.raises(ValueError, match="must-refuse"):
        choose_gate(program, only_answerable, split(questions, "dev"), progress=False)


def test_labeled_demos_cite_the_gold_passages_and_demonstrate_refusals(small_index, questions):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    demos = labeled_demos(program, split(questions, "train"))
    answered = [d for d in demos if d.answerable]
    refused = [d for d in demos if not d.answerable]
    assert answered and refused
    for demo in answered:
        cited = demo.context.split("\n\n")
        assert demo.citations and all(1 <= n <= len(cited) for n in demo.citations)
    assert all(d.citations == [] and "couldn't find" in d.answer for d in refused)


def instruction_proposer():
    """A prompt/reflection LM for MIPROv2 and GEPA: proposes the same instruction to every request."""
    from dspy.utils import DummyLM

    reply = {"proposed_instruction": "Answer strictly from the numbered passages and cite them.",
             "new_instruction": "Answer strictly from the numbered passages and cite them.",
             "observations": "-", "summary": "-", "program_description": "-", "module_description": "-"}
    return DummyLM([reply] * 5000)


# Search optimizers keep whichever candidate scores best on dev, which may be the zero-shot one (no demos).
@pytest.mark.parametrize("optimizer, min_demos", [("labeled", 1), ("bootstrap", 1), ("random-search", 0),
                                                  ("mipro", 0), ("gepa", 0)])
def test_compile_round_trip_with_dummy_lm(small_index, questions, tmp_path, optimizer, min_demos):
    lm = dummy_lm()
    program = BookRAG(small_index.retriever, lm=lm, answer_mode="generated")
    teacher = instruction_proposer() if optimizer in ("mipro", "gepa") else None
    result = compile_program(program, split(questions, "train"), split(questions, "dev"),
                             OptimizerSettings(optimizer, max_demos=2), teacher_lm=teacher, progress=False,
                             say=lambda *_: None)
    demos = result.program.generate.predict.demos
    assert min_demos <= len(demos) <= 2
    assert result.program.gate.dump_state() == program.gate.dump_state()  # the calibrated gate survived
    assert result.program.gate.calibrated
    assert set(result.scores) == {"dev"}  # train is not scored: every scored question is an LM call
    assert all(0.0 <= s[when]["combined"] <= 1.0 for s in result.scores.values() for when in ("before", "after"))

    manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "dummy", "embedder": "fake16",
                "collection": small_index.collection, "book": str(small_index.book_dir),
                "index_fingerprint": small_index.fingerprint(), "answer_mode": "generated"}
    out = write_artifact(result.program, tmp_path / "artifacts" / "small", manifest)
    loaded = load_program(out, small_index.settings, lm=lm, index=small_index)
    assert loaded.gate.dump_state() == result.program.gate.dump_state()
    assert [d["answer"] for d in loaded.generate.predict.demos] == [d["answer"] for d in demos]
    report = program_report(loaded, split(questions, "dev"), progress=False)
    assert report["n"] == 4
    response = loaded.ask("What is a node in this primer?")
    assert not response.is_refusal and "performs computation" in response.answer


def test_optimize_cli_writes_an_artifact_that_ask_loads(tmp_path):
    """The real thing on a small book: MiniLM, the embedded store, the default optimizer; extractive answers
    (clean_env), so no model is loaded."""
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "small-book", SMALL_BOOK)
    questions = write_questions(tmp_path / "questions.csv")
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"))
    done = run_script("optimize.py", "--book", book, "--questions", questions, "--json", cwd=tmp_path,
                      env={**env, "BOOKRAG_EXPAND": "parts"}, timeout=180)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)  # --json: one object, nothing else
    out = tmp_path / "artifacts" / "small-book"
    assert read_manifest(out) == manifest
    assert manifest["optimizer"]["name"] == "bootstrap" and manifest["lm"] == "local"
    assert manifest["answer_mode"] == "extractive" and manifest["expand"] == "parts"
    assert manifest["dataset"]["train"] == 6 and manifest["dataset"]["dev"] == 4
    assert set(manifest["scores"]["dev"]) == {"before", "after"}
    assert "COHERE" not in done.stdout + done.stderr

    asked = run_script("ask.py", "Which reliability profile keeps messages when the network drops packets?",
                       "--book", book, "--json", cwd=tmp_path, env=env, timeout=120)
    assert asked.returncode in (0, 1), asked.stderr
    assert json.loads(asked.stdout)["gate"]["calibrated"] is True  # ask.py picked up the compiled program


@pytest.mark.parametrize("args, message", [
    (["--max-demos", "-1"], "--max-demos"),
    (["--optimizer", "sgd"], "invalid choice"),
    (["--book", "no-such-folder"], "not a folder"),
])
def test_optimize_bad_arguments_exit_4(tmp_path, args, message):
    done = run_script("optimize.py", *args, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "d")))
    assert done.returncode == 4 and message in done.stderr


def test_optimize_with_a_question_file_lacking_a_dev_split_exits_4(tmp_path):
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "small-book", SMALL_BOOK)
    questions = tmp_path / "q.csv"
    questions.write_text("id,question,answerable,split\nq1,What is a node?,true,train\n")
    done = run_script("optimize.py", "--book", book, "--questions", questions, cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")))
    assert done.returncode == 4 and "train and dev" in done.stderr
