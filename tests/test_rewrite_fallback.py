"""A hosted LM whose follow-up rewrite holds no standalone query: the chat still answers, reading the follow-up with
the previous turn as local mode does. `ask.py --chat` as a user runs it, against a fake OpenAI-compatible server on
127.0.0.1 that answers the rewrite call without its field."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import PROJECT_ROOT, SMALL_BOOK, clean_env, write_book
from fake_openai import FakeOpenAI, serving

ANSWERS = {
    "What is a node?": ("A node is a process that performs computation.", "[1]"),
    "How do they talk to each other?": ("Nodes talk to each other over topics.", "[1]"),
}


def rewrite_without_its_field(body: dict) -> str:
    """The rewrite call gets a reply without `standalone_query`; an answer call, the answer to its question."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "`standalone_query`" in system:
        return "The follow-up asks how nodes communicate.\n\n[[ ## completed ## ]]"
    answer, citations = next(ANSWERS[q] for q in ANSWERS if f"[[ ## question ## ]]\n{q}" in user)
    return (f"[[ ## reasoning ## ]]\nPassage 1 says so.\n\n[[ ## answer ## ]]\n{answer}\n\n"
            f"[[ ## citations ## ]]\n{citations}\n\n[[ ## answerable ## ]]\nTrue\n\n[[ ## completed ## ]]")


def test_a_chat_follow_up_whose_rewrite_lacks_the_field_is_answered(tmp_path):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    with serving(FakeOpenAI(rewrite_without_its_field)) as fake:
        env = clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
                        BOOKRAG_ANSWER_MODE="generated", BOOKRAG_LM="openai/fake-model",
                        BOOKRAG_LM_API_BASE=fake.api_base, BOOKRAG_LM_RETRIES="0", OPENAI_API_KEY="sk-test-fake",
                        LITELLM_LOCAL_MODEL_COST_MAP="True")
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / "ask.py"), "--chat", "--json", "--book", str(book),
                                 "--verbose"], input="What is a node?\nHow do they talk to each other?\n/exit\n",
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False)
        rewrites = [r for r in fake.requests if "`standalone_query`" in r["messages"][0]["content"]]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "error" not in result.stderr.lower()
    first, follow_up = (json.loads(line) for line in result.stdout.splitlines())
    assert len(rewrites) == 1  # the follow-up's rewrite was asked, and its reply held no query
    assert follow_up["answer"] == "Nodes talk to each other over topics." and not follow_up["is_refusal"]
    assert follow_up["standalone_query"] == f"What is a node? {first['answer']} How do they talk to each other?"
    assert "has no standalone query; reading it with the previous turn" in result.stderr
