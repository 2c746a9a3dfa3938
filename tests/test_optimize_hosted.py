"""optimize.py with a hosted LM: the teacher and the instruction optimizers over the real wire protocol, against a
fake OpenAI-compatible server that answers every DSPy signature in its own format, so a user with keys gets the
same candidate selection, manifest and report."""

from __future__ import annotations

import json
import re

import pytest
from conftest import SMALL_BOOK, clean_env, run_script, write_book
from fake_openai import FakeOpenAI, serving
from question_files import write_questions

# Each case runs optimize.py in a fresh interpreter that embeds the book with the real MiniLM model and compiles
# against the fake server: about 20 s each on 2 cores.
pytestmark = pytest.mark.slow

_FIELD = re.compile(r"^\d+\. `(\w+)` \(([^)]*)\)", re.MULTILINE)
_VALUES = {"bool": "True", "list[int]": "[1]", "int": "1", "float": "0.5"}


def follow_the_format(body: dict) -> str:
    """A reply to any ChatAdapter prompt: every output field the system message names, with a value of its type.
    Prompts in no such format (GEPA's reflection) get a fenced instruction."""
    system = body["messages"][0]["content"]
    _, found, outputs = system.partition("Your output fields are:")
    if not found:
        return "```\nAnswer from the numbered passages only, and cite them.\n```"
    outputs = outputs.split("All interactions will be structured", 1)[0]
    fields = [f"[[ ## {name} ## ]]\n{_VALUES.get(kind, 'The primer says so in passage 1.')}"
              for name, kind in _FIELD.findall(outputs)]
    return "\n\n".join([*fields, "[[ ## completed ## ]]"])


@pytest.mark.parametrize("optimizer", ["mipro", "gepa", "bootstrap"])
def test_a_hosted_compile_asks_the_teacher_and_selects_among_candidates_like_a_local_one(tmp_path, optimizer):
    book = write_book(tmp_path / "small-book", SMALL_BOOK)
    questions = write_questions(tmp_path / "questions.csv")
    with serving(FakeOpenAI(follow_the_format)) as fake:
        env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
                        BOOKRAG_ANSWER_MODE="generated", BOOKRAG_LM_API_BASE=fake.api_base,
                        OPENAI_API_KEY="sk-test-hosted", LITELLM_LOCAL_MODEL_COST_MAP="True")
        done = run_script("optimize.py", "--book", book, "--questions", questions, "--optimizer", optimizer,
                          "--lm", "openai/fake-task", "--teacher-lm", "openai/fake-teacher", "--json",
                          cwd=tmp_path, env=env, timeout=300)
        models = [request["model"] for request in fake.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads(done.stdout)
    assert manifest["lm"] == "openai/fake-task" and manifest["optimizer"]["teacher_lm"] == "openai/fake-teacher"
    assert "fake-teacher" in models and "fake-task" in models  # the teacher proposes or bootstraps, the task answers
    selection = manifest["selection"]
    expected = ["zero-shot", "bootstrap-2", "bootstrap-4"] if optimizer == "bootstrap" else ["zero-shot", optimizer]
    assert [candidate["name"] for candidate in selection["candidates"]] == expected
    # The fake answers alike whatever the prompt: each compiled candidate ties with zero-shot on the dev subset and
    # is dropped there as futile, as a local one would be, and zero-shot is kept on that subset.
    assert all(c["n"] == 2 for c in selection["candidates"])
    assert all(c["status"] == "dropped" and c["dropped"]["futile"] for c in selection["candidates"][1:])
    assert selection["chosen"] == "zero-shot" and selection["reason"]
    assert "sk-test-hosted" not in done.stdout + done.stderr
    assert "sk-test-hosted" not in "".join(p.read_text(errors="ignore")
                                           for p in (tmp_path / "artifacts").rglob("*") if p.is_file())
