"""Library code never prints: a function that has lines for the user takes them as `say` (or `announce`) from its
caller, and the commands pass what they print; optimize.py still shows the compile's steps, on stdout, and with
--json nothing but the manifest."""

from __future__ import annotations

import ast
import json

from conftest import PROJECT_ROOT, SMALL_BOOK, clean_env, run_script, write_book

LIBRARY = ("bookrag", "retrievers", "programs")

QUESTIONS = """\
id,question,answerable,gold_sources,key_facts,reference_answer,category,split
t1,What does the zephyrine reliability profile keep?,true,"[""01-ros2/01-nodes.md""]","[""keeps messages""]",It keeps messages.,factual,train
t2,How many nodes do launch files start?,true,"[""01-ros2/02-launch.md""]","[""many nodes""]",Many nodes at once.,factual,train
t3,What is the price of the robot in euros?,false,[],[],,out-of-scope,train
t4,Who won the 2018 FIFA World Cup?,false,[],[],,out-of-scope,train
d1,What does Gazebo simulate?,true,"[""02-sim/01-gazebo.md""]","[""rigid body physics""]",Rigid body physics.,factual,dev
d2,What is the capital city of Australia?,false,[],[],,out-of-scope,dev
"""


def print_defaults(tree: ast.AST) -> list[int]:
    """Lines of the parameters whose default is the builtin `print`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            for default in [*node.defaults, *node.kw_defaults]:
                if isinstance(default, ast.Name) and default.id == "print":
                    lines.append(default.lineno)
    return lines


def test_no_library_function_defaults_a_parameter_to_print():
    found = [f"{path.relative_to(PROJECT_ROOT)}:{line}" for folder in LIBRARY
             for path in sorted((PROJECT_ROOT / folder).rglob("*.py"))
             for line in print_defaults(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_scan_finds_a_print_default():
    code = "def f(x, say=print): ...\nclass C:\n    def __init__(self, *, announce=print): ...\ng = lambda s=print: s\n"
    assert print_defaults(ast.parse(code)) == [1, 3, 4]


def compile_book(tmp_path, *flags: str):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    questions = tmp_path / "questions.csv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    return run_script("optimize.py", "--book", book, "--questions", questions, "--out", tmp_path / "artifact",
                      *flags, cwd=tmp_path, env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data")), timeout=300)


def test_optimize_shows_the_compiles_steps_on_stdout(tmp_path):
    done = compile_book(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Index ") and lines[1].startswith("Compiling with bootstrap on 4 train questions")
    assert lines[2].startswith("refusal gate: ") and "compiling bootstrap, 2 demos ..." in lines
    assert lines[-1].startswith(f"Wrote {tmp_path / 'artifact'}/ (program.json, manifest.json)")


def test_optimize_with_json_prints_the_manifest_alone(tmp_path):
    done = compile_book(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["optimizer"]["name"] == "bootstrap"
    assert "refusal gate" not in done.stdout + done.stderr
