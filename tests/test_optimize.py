"""optimize.py and the compile flow: gate calibration, teleprompters with DummyLM, the artifact round trip."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import clean_env, run_script, write_book
from question_files import QUESTIONS, write_questions

from bookrag.questions import load_questions
from programs.cli import optimize
from programs.compile import optimizers
from programs.compile.artifact import load_program, read_manifest, write_artifact
from programs.compile.compiler import compile_program, verdict
from programs.compile.optimizers import OptimizerSettings, compile_predictors, labeled_demos
from programs.evaluate.figures import CANDIDATE_FIGURES, SCORES
from programs.evaluate.reports import program_report
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import choose_gate
from programs.refusal.refusal_policy import DEFAULT_POLICY, RefusalPolicy

# More answerable dev questions, for tests that need a gain on dev to stand out from resampling noise.
MORE_DEV = [
    ("a7", "What do nodes talk to each other over?", True, "01-ros2/01-nodes.md", "topics",
     "Nodes talk to each other over topics.", "dev"),
    ("a8", "Besides a Linux shell, what should readers of the primer know?", True, "intro.md", "basic Python",
     "Readers should know basic Python.", "dev"),
    ("a9", "What does Gazebo simulate between links?", True, "02-sim/01-gazebo.md", "contact",
     "Gazebo simulates contact between links.", "dev"),
    ("a10", "What do launch files start nodes with?", True, "01-ros2/02-launch.md", "parameters",
     "Launch files start nodes with their parameters.", "dev"),
    ("a11", "What does every chapter of the primer use?", True, "intro.md", "teaching robot",
     "Every chapter uses the same teaching robot.", "dev"),
    ("a12", "Simulated sensors publish noisy measurements like what?", True, "02-sim/01-gazebo.md",
     "real hardware", "Like real hardware.", "dev"),
]


def replies(rows=QUESTIONS) -> dict:
    """DummyLM replies keyed by question: each answerable one answered with its fact (citing passage 1), the rest
    said to be unanswerable."""
    return {question: ({"reasoning": "The passages say so.", "answer": answer, "citations": [1], "answerable": True}
                       if answerable else
                       {"reasoning": "Not in the passages.", "answer": "", "citations": [], "answerable": False})
            for _, question, answerable, _, _, answer, _ in rows}


def dummy_lm():
    from dspy.utils import DummyLM

    return DummyLM(replies())


def demo_sensitive_lm(helped: bool):
    """A DummyLM whose dev answers depend on whether the prompt holds demos (turns before the question); train
    questions are answered right either way, so bootstrapping finds its traces. `helped=True`: dev answers are right
    only with demos (compiling helps); False: only without them (compiling hurts)."""
    from dspy.clients.engines.dummy_engine import AsyncDummyEngine, DummyEngine
    from dspy.utils import DummyLM

    right = replies(QUESTIONS + MORE_DEV)
    wrong = {**right, **{q: {"reasoning": "Unsure.", "answer": "It is hard to say.", "citations": [1],
                             "answerable": True}
                         for _, q, answerable, _, _, _, split in QUESTIONS + MORE_DEV if answerable and split == "dev"}}

    class Engine(DummyEngine):  # DummyLM answers through its engine: the one place that sees the whole prompt
        def _complete_messages(self, messages):
            with_demos = len(messages) > 2  # system, [demo question, demo answer]..., the question
            self.owner.answers = right if with_demos == helped else wrong
            return super()._complete_messages(messages)

    lm = DummyLM(right)
    lm._engine_spec = Engine(lm)
    lm._async_engine_spec = AsyncDummyEngine(lm._engine_spec)
    return lm


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
    assert gate["policy"] == DEFAULT_POLICY.as_dict()
    for figures in gate["candidates"].values():
        assert 0.0 <= figures["refusal_recall"] <= 1.0 and 0.0 <= figures["false_refusal_rate"] <= 1.0


def test_choose_gate_fits_under_the_policy_it_is_given(small_index, questions):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    policy = RefusalPolicy(max_false_refusal=0.2, min_top_cosine=0.1)
    gate = choose_gate(program, split(questions, "train"), split(questions, "dev"), progress=False, policy=policy)
    assert gate["policy"] == policy.as_dict()
    assert program.gate.min_top_cosine == gate["state"]["min_top_cosine"] == 0.1  # whichever candidate was chosen


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


def fake_manifest(index, answer_mode="generated") -> dict:
    """The manifest keys write_artifact and load_program need."""
    return {"bookrag_version": "test", "dspy_version": "test", "lm": "dummy", "embedder": "fake16",
            "collection": index.collection, "book": str(index.book_dir), "index_fingerprint": index.fingerprint(),
            "answer_mode": answer_mode}


def saved_demos(artifact: Path) -> list:
    return json.loads((artifact / "program.json").read_text())["generate.predict"]["demos"]


# Search optimizers keep whichever of their programs scores best on dev, which may be one with no demos.
@pytest.mark.parametrize("optimizer, min_demos", [("labeled", 1), ("bootstrap", 1), ("random-search", 0),
                                                  ("mipro", 0), ("gepa", 0)])
def test_candidates_that_tie_with_zero_shot_leave_the_zero_shot_program_with_its_gate(
        small_index, questions, tmp_path, optimizer, min_demos):
    lm = dummy_lm()  # answers the same with or without demos: every candidate ties with zero-shot
    program = BookRAG(small_index.retriever, lm=lm, answer_mode="generated")
    teacher = instruction_proposer() if optimizer in ("mipro", "gepa") else None
    result = compile_program(program, split(questions, "train"), split(questions, "dev"),
                             OptimizerSettings(optimizer, max_demos=2), teacher_lm=teacher, progress=False,
                             say=lambda *_: None)
    compiled = result.candidates[-1].program  # the optimizer ran: its program has demos
    assert compiled is not program and min_demos <= len(compiled.generate.predict.demos) <= 2
    assert program.gate.calibrated
    assert all(c.program.gate.dump_state() == program.gate.dump_state() for c in result.candidates)  # gate kept
    assert result.selection["chosen"] == "zero-shot" and result.program is program
    # a tie on the dev subset is futile: the candidates are dropped before the rest of dev
    assert result.selection["reason"].startswith("zero-shot kept: ")
    assert all(c["status"] == "dropped" and c["dropped"]["futile"] for c in result.selection["candidates"][1:])
    assert verdict(result.selection) == ("Compiling did not beat zero-shot on dev: kept the zero-shot program "
                                         "(with this book's refusal gate).")
    assert set(result.scores) == {"dev"}  # train is not scored: every scored question is an LM call
    assert result.scores["dev"]["before"] == result.scores["dev"]["after"]
    assert 0.0 <= result.scores["dev"]["after"]["combined"] <= 1.0

    out = write_artifact(result.program, tmp_path / "artifacts" / "small", fake_manifest(small_index))
    assert saved_demos(out) == []  # the zero-shot program, as written
    loaded = load_program(out, small_index.settings, lm=lm, index=small_index)
    assert loaded.gate.dump_state() == program.gate.dump_state() and loaded.generate.predict.demos == []
    response = loaded.ask("What is a node in this primer?")
    assert not response.is_refusal and "performs computation" in response.answer


def test_a_candidate_clearly_better_than_zero_shot_is_kept_and_its_demos_round_trip(small_index, tmp_path):
    questions = load_questions(write_questions(tmp_path / "questions.csv", QUESTIONS + MORE_DEV))
    lm = demo_sensitive_lm(helped=True)
    program = BookRAG(small_index.retriever, lm=lm, answer_mode="generated")
    result = compile_program(program, split(questions, "train"), split(questions, "dev"),
                             OptimizerSettings("bootstrap", max_demos=4), progress=False, say=lambda *_: None)
    selection = result.selection
    # bootstrap-2 beats zero-shot; bootstrap-4 answers as well as bootstrap-2, so the simpler is kept
    assert selection["chosen"] == "bootstrap-2"
    assert [(c["name"], c["status"]) for c in selection["candidates"]] == [
        ("zero-shot", "not kept"), ("bootstrap-2", "kept"), ("bootstrap-4", "not kept")]
    assert [(c["candidate"], c["baseline"], c["won"]) for c in selection["comparisons"]] == [
        ("bootstrap-2", "zero-shot", True), ("bootstrap-4", "bootstrap-2", False)]
    assert selection["reason"].startswith("bootstrap-2: +") and " combined over zero-shot on 10 questions" in \
        selection["reason"]
    assert verdict(selection) == "Compiling beat zero-shot on dev: kept bootstrap-2 (with this book's refusal gate)."
    before, after = result.scores["dev"]["before"], result.scores["dev"]["after"]
    assert after["combined"] > before["combined"] and after["key_fact_accuracy"] > before["key_fact_accuracy"]
    assert before == {k: v for k, v in selection["candidates"][0].items() if k in before}
    demos = result.program.generate.predict.demos
    assert 1 <= len(demos) <= 2 and result.program.gate.dump_state() == program.gate.dump_state()

    out = write_artifact(result.program, tmp_path / "artifacts" / "small", fake_manifest(small_index))
    assert [d["answer"] for d in saved_demos(out)] == [d["answer"] for d in demos]
    loaded = load_program(out, small_index.settings, lm=lm, index=small_index)
    assert [d["answer"] for d in loaded.generate.predict.demos] == [d["answer"] for d in demos]
    assert loaded.gate.dump_state() == program.gate.dump_state()
    report = program_report(loaded, split(questions, "dev"), progress=False)
    assert report["combined"] == pytest.approx(after["combined"], abs=1e-4)


def test_compiled_candidates_clearly_worse_on_the_dev_subset_are_dropped_and_zero_shot_is_kept(small_index, tmp_path):
    questions = load_questions(write_questions(tmp_path / "questions.csv", QUESTIONS + MORE_DEV))
    program = BookRAG(small_index.retriever, lm=demo_sensitive_lm(helped=False), answer_mode="generated")
    said = []
    result = compile_program(program, split(questions, "train"), split(questions, "dev"),
                             OptimizerSettings("bootstrap", max_demos=4), progress=False, say=said.append)
    candidates = result.selection["candidates"]
    # both dropped after the dev subset: nothing is left to challenge zero-shot, so the rest of dev is not answered
    assert [(c["name"], c["status"], c["n"]) for c in candidates] == [
        ("zero-shot", "kept", 5), ("bootstrap-2", "dropped", 5), ("bootstrap-4", "dropped", 5)]
    for dropped in candidates[1:]:
        assert (dropped["dropped"]["candidate"], dropped["dropped"]["won"]) == ("zero-shot", True)
    reason = result.selection["reason"]
    assert reason.startswith("zero-shot kept: bootstrap-2 dropped after the dev subset (zero-shot: +")
    assert "; bootstrap-4 dropped after the dev subset (zero-shot: +" in reason
    assert any(line.startswith("dropped bootstrap-4 after the dev subset (zero-shot: +") for line in said)
    assert said[-1] == "every other candidate dropped: zero-shot kept without answering the rest of dev"
    assert result.program is program and verdict(result.selection).startswith("Compiling did not beat zero-shot")


def test_with_no_demos_allowed_zero_shot_is_the_only_candidate_and_says_so(small_index, questions):
    program = BookRAG(small_index.retriever, lm=None, answer_mode="extractive")
    result = compile_program(program, split(questions, "train"), split(questions, "dev"),
                             OptimizerSettings("bootstrap", max_demos=0), progress=False, say=lambda *_: None)
    assert result.program is program and [c["name"] for c in result.selection["candidates"]] == ["zero-shot"]
    assert result.selection["candidates"][0]["n"] == 4 and result.selection["comparisons"] == []
    assert result.selection["reason"] == "zero-shot kept: there was no other candidate"
    assert verdict(result.selection) == ("No compiled candidate to try: kept the zero-shot program "
                                         "(with this book's refusal gate).")


def test_an_optimizer_is_one_entry_of_the_table(monkeypatch):
    """A name added to OPTIMIZERS compiles through its entry and is an --optimizer choice; another name is refused
    naming the known ones."""
    program = object()
    monkeypatch.setitem(optimizers.OPTIMIZERS, "identity", lambda job: job.program)
    assert compile_predictors(program, OptimizerSettings("identity"), [], [], say=print) is program
    assert optimize.build_parser().parse_args(["--optimizer", "identity"]).optimizer == "identity"
    with pytest.raises(ValueError, match="unknown optimizer 'nope': choose one of bootstrap, labeled"):
        compile_predictors(program, OptimizerSettings("nope"), [], [], say=print)


def test_optimize_cli_writes_an_artifact_that_ask_loads(tmp_path, capsys):
    """The real thing on a small book: MiniLM, the embedded store, the default optimizer; extractive answers
    (clean_env), so no model is loaded."""
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "small-book", SMALL_BOOK)
    questions = write_questions(tmp_path / "questions.csv")
    env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"))
    done = run_script("optimize.py", "--book", book, "--questions", questions, "--json", "--max-false-refusal", "0.1",
                      cwd=tmp_path, env={**env, "BOOKRAG_EXPAND": "parts"}, timeout=180)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)  # --json: one object, nothing else
    out = tmp_path / "artifacts" / "small-book"
    assert read_manifest(out) == manifest
    assert manifest["optimizer"]["name"] == "bootstrap" and manifest["lm"] == "local"
    assert manifest["answer_mode"] == "extractive" and manifest["expand"] == "parts"
    assert manifest["dataset"]["train"] == 6 and manifest["dataset"]["dev"] == 4
    assert manifest["refusal_gate"]["policy"] == RefusalPolicy(max_false_refusal=0.1).as_dict()  # what it refuses
    assert set(manifest["scores"]["dev"]) == {"before", "after"}
    assert set(manifest["scores"]["dev"]["before"]) == set(SCORES)  # the figures table's scores
    selection = manifest["selection"]  # every candidate's dev figures, the kept one and why
    assert [c["name"] for c in selection["candidates"]] == ["zero-shot", "bootstrap-2", "bootstrap-4"]
    for candidate in selection["candidates"]:
        assert {"combined", "key_fact_accuracy", "refusal_recall", "false_refusal_rate", "token_f1"} <= set(candidate)
        assert set(CANDIDATE_FIGURES) <= set(candidate)
    # Extractive answers run no predictor, so demos change nothing: every candidate ties with zero-shot on the dev
    # subset, is dropped there as futile, and zero-shot is kept without answering the rest of dev.
    zero_shot, *compiled = selection["candidates"]
    assert zero_shot["n"] == 2 and zero_shot["dropped"] is None
    assert all(c["n"] == 2 and c["dropped"]["futile"] for c in compiled)
    assert selection["chosen"] == "zero-shot" and selection["reason"].startswith("zero-shot kept: bootstrap-2 dropped")
    assert selection["rule"] == {"resamples": 2000, "confidence": 0.95, "subset_share": 0.5, "seed": 0}
    assert manifest["scores"]["dev"]["before"] == manifest["scores"]["dev"]["after"]
    assert json.loads((out / "program.json").read_text())["generate.predict"]["demos"] == []
    assert "COHERE" not in done.stdout + done.stderr

    asked = run_script("ask.py", "Which reliability profile keeps messages when the network drops packets?",
                       "--book", book, "--json", cwd=tmp_path, env=env, timeout=120)
    assert asked.returncode in (0, 1), asked.stderr
    assert json.loads(asked.stdout)["gate"]["calibrated"] is True  # ask.py picked up the compiled program

    optimize._print_selection(manifest)  # what the terminal shows without --json
    shown = capsys.readouterr().out
    rows = [line.split() for line in shown.splitlines() if line.startswith(("zero-shot ", "bootstrap-"))]
    assert [(row[0], row[1], " ".join(row[7:])) for row in rows] == [  # name, n, 5 figures, status
        ("zero-shot", "2", "kept"), ("bootstrap-2", "2", "dropped"), ("bootstrap-4", "2", "dropped")]
    assert ("Compiling did not beat zero-shot on dev: kept the zero-shot program (with this book's refusal gate).\n"
            f"Why: {selection['reason']}\n") in shown


@pytest.mark.parametrize("args, message", [
    (["--max-demos", "-1"], "--max-demos"),
    (["--max-false-refusal", "1.5"], "--max-false-refusal: expected a share from 0 to 1"),
    (["--optimizer", "sgd"], "invalid choice"),
    (["--book", "no-such-folder"], "not a folder"),
])
def test_optimize_bad_arguments_exit_4(tmp_path, args, message):
    done = run_script("optimize.py", *args, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "d")))
    assert done.returncode == 4 and message in done.stderr


@pytest.mark.parametrize("flags", [["--minutes", "30"], ["--frozen-int8"], ["--examples", "all", "--epochs", "3"],
                                   ["--no-bootstrap"]])
def test_training_flags_without_the_finetune_optimizer_exit_4_naming_them(tmp_path, flags):
    """--optimizer bootstrap took --minutes, --frozen-int8 and --examples and ignored them without a word."""
    done = run_script("optimize.py", "--optimizer", "bootstrap", *flags, cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "d")))
    assert done.returncode == 4, done.stderr
    assert all(flag in done.stderr for flag in flags if flag.startswith("--"))
    assert "apply to --optimizer finetune only, not to --optimizer bootstrap" in done.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("answer_mode, env, given", [
    (["--answer-mode", "extractive"], {}, "--answer-mode extractive"),
    ([], {"BOOKRAG_ANSWER_MODE": "extractive"}, "BOOKRAG_ANSWER_MODE=extractive"),
])
def test_finetune_for_extractive_answers_exits_4_before_any_work(tmp_path, answer_mode, env, given):
    """It loaded the model and began the training path, for a reader that would never answer."""
    out = tmp_path / "out"
    done = run_script("optimize.py", "--optimizer", "finetune", *answer_mode, "--out", out, cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "d"), **env), timeout=60)
    assert done.returncode == 4, done.stderr
    assert f"--optimizer finetune with {given}: the finetune optimizer trains the reader" in done.stderr
    assert "--answer-mode generated" in done.stderr and "another --optimizer" in done.stderr  # the fixes
    assert not out.exists() and not (tmp_path / "d").exists()  # before --out is claimed or anything is read


def test_optimize_with_a_question_file_lacking_a_dev_split_exits_4(tmp_path):
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "small-book", SMALL_BOOK)
    questions = tmp_path / "q.csv"
    questions.write_text("id,question,answerable,split\nq1,What is a node?,true,train\n")
    done = run_script("optimize.py", "--book", book, "--questions", questions, cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")))
    assert done.returncode == 4 and "train and dev" in done.stderr


# -- --out: only a folder bookrag wrote is replaced, and that is checked before any work ----------------------

def run_optimize_out(tmp_path, book: Path, out) -> subprocess.CompletedProcess:
    return run_script("optimize.py", "--book", book, "--questions", write_questions(tmp_path / "questions.csv"),
                      "--out", out, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")))


def test_optimize_out_naming_the_folder_that_holds_the_book_is_refused_and_the_book_kept(tmp_path):
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "p" / "book", SMALL_BOOK)
    done = run_optimize_out(tmp_path, book, tmp_path / "p")
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"error: --out {tmp_path / 'p'} holds the book ({book}), which bookrag must not replace: "
                           "name a new folder\n")
    assert (book / "intro.md").is_file()
    assert not (tmp_path / "data" / "qdrant").exists()  # refused before the ingest


def test_optimize_out_naming_a_folder_of_the_users_files_is_refused_and_they_are_kept(tmp_path):
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "book", SMALL_BOOK)
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("my only copy")
    done = run_optimize_out(tmp_path, book, mine)
    assert done.returncode == 4 and f"--out {mine} holds files that are not a bookrag compiled program" in done.stderr
    assert (mine / "chapter1.tex").read_text() == "my only copy"
    assert not (tmp_path / "data" / "qdrant").exists()


def test_a_default_artifact_folder_of_the_users_files_is_named_as_the_settings_give_it(tmp_path):
    """Without --out the folder comes from BOOKRAG_ARTIFACTS_DIR: the refusal says so, not "--out"."""
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "book", SMALL_BOOK)
    default = tmp_path / "artifacts" / "book"
    default.mkdir(parents=True)
    (default / "notes.txt").write_text("mine")
    done = run_script("optimize.py", "--book", book, "--questions", write_questions(tmp_path / "questions.csv"),
                      cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"),
                                                  BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts")))
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"error: the artifact folder under BOOKRAG_ARTIFACTS_DIR {default} holds files "
                                  "that are not a bookrag compiled program")
    assert (default / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("out, message", [
    ("notes.txt", "is a file, not a folder"),
    ("notes.txt/artifact", "is under"),
    (".", "which bookrag must not replace"),  # the current folder, which also holds the book
    ("/sys/bookrag-artifact", "cannot be written"),
])
def test_optimize_out_it_cannot_use_exits_4_before_any_work(tmp_path, out, message):
    from conftest import SMALL_BOOK

    book = write_book(tmp_path / "book", SMALL_BOOK)
    (tmp_path / "notes.txt").write_text("mine")
    done = run_optimize_out(tmp_path, book, out)
    assert done.returncode == 4 and message in done.stderr, done.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not list(tmp_path.glob(".notes.txt.old-*")) and not (tmp_path / "data" / "qdrant").exists()


def test_optimize_max_demos_above_the_artifact_bound_exits_4(tmp_path):
    done = run_script("optimize.py", "--max-demos", "33", cwd=tmp_path,
                      env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "d")))
    assert done.returncode == 4 and "--max-demos must be from 0 to 32" in done.stderr
