"""ask.py as a user runs it: subprocesses with the real MiniLM embedder and the default (zero-shot, offline) program
over a tiny book in tmp, plus in-process tests of the chat loop and --validate with stub programs.

The subprocesses share one data folder (module scope): the first run indexes the book, the others reuse it. Only
the ones that ask a question load MiniLM; the argument and configuration errors exit before any model is touched.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fake_openai import FakeOpenAI, _Handler, serving

from bookrag.config import REFUSAL_MESSAGE
from bookrag.errors import AgentError
from programs.cli import ask
from programs.rag.response import Citation, Response, Section

SECRETS = {"QDRANT_API_KEY": "sekret-qdrant-5f1c9a7e", "OPENAI_API_KEY": "sekret-openai-8b2d4c6f"}
BOOK = {
    "intro.md": """
        ---
        title: Welcome
        ---

        # Welcome

        The teaching robot in this book is called Quillon. Quillon is 1.4 m tall and weighs 31 kg.
        """,
    "01-ros2/01-topics.md": """
        ---
        title: Topics
        ---

        # Topics

        Topics carry messages between ROS 2 nodes. The zephyrine reliability profile keeps messages when packets drop.
        """,
    "02-sim/01-gazebo.md": """
        ---
        title: Gazebo Physics
        ---

        # Gazebo Physics

        Gazebo simulates gravity, friction and contact between links. The simulator steps physics at 1000 Hz.
        """,
}
IN_SCOPE = "How tall is the Quillon robot?"
OUT_OF_SCOPE = "What is the capital of France?"


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("ask-cli")
    book = root / "book"
    for rel, text in BOOK.items():
        (book / rel).parent.mkdir(parents=True, exist_ok=True)
        (book / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("BOOKRAG_", "COHERE_", "QDRANT_")) and k not in SECRETS}
    # Extractive answers: these tests pin the CLI contract; test_the_local_model_answers_... runs the real model.
    return {**clean, **SECRETS, "BOOKRAG_DATA_DIR": str(root / "data"), "BOOKRAG_BOOK": str(book),
            "BOOKRAG_ARTIFACTS_DIR": str(root / "artifacts"), "COLUMNS": "200", "BOOKRAG_ANSWER_MODE": "extractive"}


def run_ask(env: dict[str, str], *args: str, stdin: str = "", **extra_env: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, str(ROOT / "ask.py"), *args], input=stdin, capture_output=True, text=True, timeout=180, check=False,
        env={**env, **extra_env}, cwd=Path(env["BOOKRAG_DATA_DIR"]).parent,  # no project .env is read
    )
    for secret in SECRETS.values():  # every run, whatever it tests
        assert secret not in result.stdout and secret not in result.stderr
    return result


def one_json_object(stdout: str) -> dict:
    data = json.loads(stdout)  # raises on anything besides exactly one JSON document
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def first_run(env) -> subprocess.CompletedProcess:
    """The first question on a fresh data folder: indexes the book, then refuses an out-of-scope question."""
    return run_ask(env, OUT_OF_SCOPE, "--json")


def test_first_run_indexes_the_book_and_says_so_on_stderr(first_run):
    assert "Indexing" in first_run.stderr and "Indexed:" in first_run.stderr
    assert "Indexing" not in first_run.stdout


def test_json_refusal_prints_only_json_and_exits_1(first_run):
    assert first_run.returncode == 1, first_run.stderr
    data = one_json_object(first_run.stdout)
    assert data["is_refusal"] is True and data["answer"] == REFUSAL_MESSAGE
    assert data["citations"] == [] and data["confidence"] == "none"


def test_in_scope_question_answers_with_citations_verbose_json_and_no_secrets(env, first_run):
    result = run_ask(env, IN_SCOPE, "--verbose", "--json")
    assert result.returncode == 0, result.stderr
    data = one_json_object(result.stdout)  # --verbose logs go to stderr, never into the JSON
    assert not data["is_refusal"] and "1.4 m" in data["answer"]
    assert len(data["citations"]) >= 1 and data["citations"][0]["source"] == "intro.md"
    assert data["passages"] and data["gate"]["answerable"] is True
    assert "Indexing" not in result.stderr  # the index from the first run is reused


def test_books_in_folders_named_alike_answer_from_their_own_text_and_an_edited_page_is_picked_up(env, tmp_path):
    """x/book and y/book used to share one collection: y answered with x's facts, exit 0. And an edited page was
    answered from the text indexed before the edit, with no warning."""
    books = {}
    for where, height in (("x", "1.4 m"), ("y", "2.7 m")):
        books[where] = tmp_path / where / "book"
        for rel, text in BOOK.items():
            (books[where] / rel).parent.mkdir(parents=True, exist_ok=True)
            (books[where] / rel).write_text(textwrap.dedent(text).lstrip().replace("1.4 m", height), encoding="utf-8")
    shared = {**env, "BOOKRAG_DATA_DIR": str(tmp_path / "data"), "BOOKRAG_ARTIFACTS_DIR": str(tmp_path / "artifacts")}
    for where, height, other in (("x", "1.4 m", "2.7 m"), ("y", "2.7 m", "1.4 m")):
        result = run_ask(shared, IN_SCOPE, "--json", "--book", str(books[where]))
        assert result.returncode == 0, result.stderr
        answer = one_json_object(result.stdout)["answer"]
        assert height in answer and other not in answer
    intro = books["x"] / "intro.md"
    intro.write_text(intro.read_text().replace("1.4 m", "5.2 m"))
    result = run_ask(shared, IN_SCOPE, "--json", "--book", str(books["x"]))
    assert result.returncode == 0, result.stderr
    assert "The book changed since it was indexed (1 file(s): intro.md): updating the index ..." in result.stderr
    answer = one_json_object(result.stdout)["answer"]
    assert "5.2 m" in answer and "1.4 m" not in answer


def test_a_page_edited_between_two_chat_turns_is_picked_up_before_the_second(env, tmp_path):
    """The chat checks the book before every turn, not only when it opens: the second turn answers from the edit."""
    book = tmp_path / "book"
    for rel, text in BOOK.items():
        (book / rel).parent.mkdir(parents=True, exist_ok=True)
        (book / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    chat_env = {**env, "BOOKRAG_DATA_DIR": str(tmp_path / "data"), "BOOKRAG_BOOK": str(book)}
    chat = subprocess.Popen([sys.executable, str(ROOT / "ask.py"), "--chat", "--json"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=chat_env, cwd=tmp_path)
    try:
        chat.stdin.write(IN_SCOPE + "\n")
        chat.stdin.flush()
        first = json.loads(chat.stdout.readline())
        (book / "intro.md").write_text((book / "intro.md").read_text().replace("1.4 m", "5.2 m"))
        chat.stdin.write(IN_SCOPE + "\n")
        chat.stdin.close()
        second = json.loads(chat.stdout.readline())
        err = chat.stderr.read()
    finally:
        if chat.poll() is None:
            chat.kill()
        chat.wait(timeout=60)
    assert "1.4 m" in first["answer"]
    assert "5.2 m" in second["answer"] and "1.4 m" not in second["answer"]
    assert "The book changed since it was indexed (1 file(s): intro.md): updating the index ..." in err


@pytest.mark.slow
def test_the_local_model_answers_how_tall_kestrel_is_briefly_and_cites_intro(tmp_path):
    """The README's first example, as a user runs it: the bundled book, the packaged model, generated answers."""
    from programs.lm.packaged_model import QWEN_CODER_1_5B

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    packaged = QWEN_CODER_1_5B.path(ROOT / "data" / "models")  # assembled once, shared with the other slow tests
    (models / packaged.name).symlink_to(packaged)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BOOKRAG_", "COHERE_", "QDRANT_"))}
    env = {**clean, "BOOKRAG_DATA_DIR": str(tmp_path / "data"), "BOOKRAG_ARTIFACTS_DIR": str(tmp_path / "artifacts")}
    answered = run_ask(env, "How tall is Kestrel?", "--json")
    assert answered.returncode == 0, answered.stderr
    data = one_json_object(answered.stdout)
    assert data["mode"] == "generated" and "1.2 m" in data["answer"]
    assert len(re.findall(r"[.!?](?:\s|$)", data["answer"].strip())) <= 2  # one or two sentences
    assert "intro.md" in [c["source"] for c in data["citations"]]
    refused = run_ask(env, "What is the capital of France?", "--json")
    assert refused.returncode == 1 and one_json_object(refused.stdout)["is_refusal"] is True


def test_chat_through_stdin_resets_and_exits_cleanly(env, first_run):
    result = run_ask(env, stdin=f"{IN_SCOPE}\n/reset\n{OUT_OF_SCOPE}\n/exit\nnever asked\n")
    assert result.returncode == 0, result.stderr
    assert "1.4 m" in result.stdout and "Sources" in result.stdout and "intro" in result.stdout
    assert result.stdout.count(REFUSAL_MESSAGE) == 1  # nothing after /exit was asked
    assert "cleared" in result.stderr


def test_bad_flag_exits_4():
    result = subprocess.run([sys.executable, str(ROOT / "ask.py"), "--no-such-flag"], capture_output=True, check=False,
                            text=True, timeout=60)
    assert result.returncode == 4
    assert "--no-such-flag" in result.stderr and result.stdout == ""


@pytest.mark.parametrize("top_k", ["51", "10000", "0"])
def test_top_k_outside_1_to_50_exits_4_saying_the_range(env, top_k):
    """`--top-k 10000` sent every passage of the book to the LM."""
    result = run_ask(env, IN_SCOPE, "--top-k", top_k)
    assert result.returncode == 4, result.stderr
    assert f"argument --top-k: must be between 1 and 50, got {top_k}" in result.stderr and result.stdout == ""


def test_bad_environment_variable_exits_2(env):
    result = run_ask(env, IN_SCOPE, "--json", BOOKRAG_TOP_K="abc")
    assert result.returncode == 2
    assert "BOOKRAG_TOP_K" in result.stderr and result.stdout == ""


@pytest.fixture
def artifact_left_aside(env, first_run, tmp_path) -> Path:
    """A compiled program for the book (its gate refuses everything), as an optimize killed between its two renames
    leaves it: moved aside to `.book.old-*`, the new one not yet in place."""
    from conftest import killed_between_renames

    from programs.compile.artifact import write_artifact
    from programs.rag.book_rag import BookRAG
    from programs.refusal.refusal_gate import RefusalGate

    program = BookRAG(None, answer_mode="extractive")
    program.gate = RefusalGate.cosine_cut(2.0)  # no cosine reaches 2
    manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": "minilm384",
                "collection": "book__minilm384", "book": env["BOOKRAG_BOOK"], "index_fingerprint": "0" * 16,
                "answer_mode": "extractive"}
    artifact = write_artifact(program, tmp_path / "artifacts" / "book", manifest, Path(env["BOOKRAG_DATA_DIR"]))
    killed_between_renames(artifact, Path(env["BOOKRAG_DATA_DIR"]))
    return artifact


@pytest.mark.parametrize("how", ["default", "--program"])
def test_a_program_left_aside_by_a_killed_optimize_is_used_where_it_lies(env, artifact_left_aside, how):
    """Not the uncalibrated program instead (default), nor "not a folder" (--program); and ask, a reader, moves
    nothing (issue 49): the next optimize puts it back."""
    left = sorted(p.name for p in artifact_left_aside.parent.iterdir())
    args = ["--program", str(artifact_left_aside)] if how == "--program" else []
    result = run_ask(env, IN_SCOPE, "--json", *args, BOOKRAG_ARTIFACTS_DIR=str(artifact_left_aside.parent))
    assert result.returncode == 1, result.stderr
    data = one_json_object(result.stdout)
    assert data["is_refusal"] and data["gate"]["calibrated"] is True
    assert f"{artifact_left_aside} was moved aside to" in result.stderr
    assert sorted(p.name for p in artifact_left_aside.parent.iterdir()) == left


# -- in process: the chat loop and --validate, with stub programs --------------------------------------------------

def answer(text: str, refused: bool = False, query: str = "q") -> Response:
    citations = [] if refused else [Citation("Welcome", "Welcome", "/docs/intro", "intro.md", "general", "c1", 0.7)]
    return Response(answer=text, query=query, citations=citations, is_refusal=refused,
                    confidence="none" if refused else "high", mode="refused" if refused else "extractive")


class StubProgram:
    def __init__(self, replies):
        self.replies, self.calls = replies, []

    def ask(self, question, **kwargs):
        self.calls.append((question, kwargs.get("history")))
        reply = self.replies(question)
        if isinstance(reply, Exception):
            raise reply
        return reply


def args(**kw) -> SimpleNamespace:
    return SimpleNamespace(**{"question": None, "json": False, "verbose": False, "top_k": None, "module": None, **kw})


def feed(monkeypatch, *lines: str, then: type[BaseException] = EOFError) -> None:
    queue = list(lines)

    def fake_input(prompt=""):
        if not queue:
            raise then()
        return queue.pop(0)

    monkeypatch.setattr("builtins.input", fake_input)


def test_chat_survives_an_error_in_one_turn(monkeypatch, capsys):
    program = StubProgram(lambda q: AgentError("Language model x failed") if q == "boom" else answer(f"about {q}", query=q))
    feed(monkeypatch, "first", "boom", "", "second")
    assert ask.chat(program, args()) == 0  # EOF (Ctrl-D) leaves with 0
    out, err = capsys.readouterr()
    assert "about first" in out and "about second" in out
    assert "error: Language model x failed" in err
    assert [q for q, _ in program.calls] == ["first", "boom", "second"]
    assert program.calls[-1][1] == [{"question": "first", "answer": "about first"}]  # the failed turn is not kept


def test_chat_reset_clears_history_and_ctrl_c_exits_0(monkeypatch, capsys):
    program = StubProgram(lambda q: answer(f"about {q}"))
    feed(monkeypatch, "first", "/reset", "second", then=KeyboardInterrupt)
    assert ask.chat(program, args()) == 0
    assert program.calls[-1] == ("second", [])


def test_chat_json_prints_one_object_per_turn_and_the_prompt_elsewhere(monkeypatch, capsys):
    program = StubProgram(lambda q: answer(REFUSAL_MESSAGE, refused=True) if "France" in q else answer("1.4 m"))
    feed(monkeypatch, IN_SCOPE, OUT_OF_SCOPE, "quit", "never")
    assert ask.chat(program, args(json=True)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["is_refusal"] for line in lines] == [False, True]


NEAREST = [Section("Welcome", "Welcome › Who should read it", "/docs/intro#who-should-read-it", "intro.md", "", 0.41),
           Section("Topics", "Topics", "/docs/ros2/topics", "01-ros2/01-topics.md", "ros2", 0.33)]


def pointing_refusal(query: str = "q") -> Response:
    return Response(answer=REFUSAL_MESSAGE, query=query, is_refusal=True, refusal_reason="gate", mode="refused",
                    nearest=NEAREST)


def test_a_refusal_about_the_book_shows_its_closest_sections(capsys):
    ask.show(pointing_refusal(), args())
    out = capsys.readouterr().out
    assert out.index(REFUSAL_MESSAGE) < out.index("Closest sections:") and "Sources:" not in out
    assert "- Welcome › Who should read it  (score 0.410)" in out and "/docs/intro#who-should-read-it" in out
    assert "- Topics  (score 0.330)" in out and "/docs/ros2/topics" in out
    ask.show(answer(REFUSAL_MESSAGE, refused=True), args())
    assert "Closest sections" not in capsys.readouterr().out  # off-topic: the bare line


def test_a_blank_title_and_heading_show_the_file_instead(capsys):
    """A page titled `title: " "` showed its closest section and its citation as a blank label."""
    blank = Section("  ", "  ", "/docs/notes", "notes.md", "", 0.3)
    ask.show(Response(answer=REFUSAL_MESSAGE, query="q", is_refusal=True, refusal_reason="gate", mode="refused",
                      nearest=[blank]), args())
    ask.show(Response(answer="1.4 m", query="q", citations=[Citation("  ", "", "/docs/notes", "notes.md", "", "c1", 0.5)]),
             args())
    out = capsys.readouterr().out
    assert "  - notes.md  (score 0.300)" in out and "  1. notes.md  (score 0.500)" in out


def test_json_carries_the_closest_sections_as_nearest(capsys):
    ask.show(pointing_refusal(), args(json=True))
    data = json.loads(capsys.readouterr().out)
    assert data["citations"] == [] and [s["url"] for s in data["nearest"]] == [s.url for s in NEAREST]
    assert data["nearest"][1] == {"title": "Topics", "heading": "Topics", "url": "/docs/ros2/topics",
                                  "source": "01-ros2/01-topics.md", "module": "ros2", "score": 0.33}


def test_the_chat_shows_the_closest_sections(monkeypatch, capsys):
    program = StubProgram(lambda q: pointing_refusal(q))
    feed(monkeypatch, "What colour is the Quillon robot?")
    assert ask.chat(program, args()) == 0
    out = capsys.readouterr().out
    assert "Closest sections:" in out and "/docs/ros2/topics" in out


@pytest.mark.parametrize("correct, expected_exit", [(len(ask.VALIDATION), 0), (len(ask.VALIDATION) // 2, 5)])
def test_validate_passes_at_80_percent_else_exits_5(capsys, correct, expected_exit):
    expected = dict(ask.VALIDATION)
    right = {q for q, _ in ask.VALIDATION[:correct]}

    def reply(question):
        fact = expected[question]
        if (question in right) == (fact is None):
            return answer(REFUSAL_MESSAGE, refused=True)  # right for must-refuse, wrong for answerable
        return answer(f"It is {fact}." if question in right else "Something else entirely.")

    assert ask.validate(StubProgram(reply), args()) == expected_exit
    out = capsys.readouterr().out
    assert out.count("PASS") == correct and out.count("FAIL") == len(ask.VALIDATION) - correct
    assert f"({correct}/{len(ask.VALIDATION)})" in out


def test_validation_set_is_half_answerable_half_must_refuse():
    facts = [fact for _, fact in ask.VALIDATION]
    assert 5 <= sum(f is not None for f in facts) <= 8 and 5 <= sum(f is None for f in facts) <= 8
    book = "\n".join(p.read_text() for p in (ROOT / "datasets" / "humanoid-primer").rglob("*.md*"))
    assert all(f in book for f in facts if f)  # every key fact is verbatim in the bundled book


# -- --expand -----------------------------------------------------------------------------------------------------

@pytest.fixture
def opened(monkeypatch, tmp_path):
    """ask.main in process, with open_program stubbed: records the settings it got."""
    monkeypatch.chdir(tmp_path)  # no project .env
    for name in [k for k in os.environ if k.startswith("BOOKRAG_")]:
        monkeypatch.delenv(name)
    calls = {}

    def open_program(settings, **kwargs):
        calls["settings"] = settings
        return StubProgram(lambda q: answer("1.4 m", query=q))

    monkeypatch.setattr("programs.compile.artifact.open_program", open_program)
    return calls


@pytest.mark.parametrize("argv, env, expected", [
    ([], {}, None),  # not configured: a compiled program keeps its own, zero-shot searches without
    (["--expand", "parts"], {}, "parts"),
    ([], {"BOOKRAG_EXPAND": "hyde"}, "hyde"),
    (["--expand", "none"], {"BOOKRAG_EXPAND": "parts"}, "none"),  # the flag wins over the environment
])
def test_expand_flag_and_variable_reach_the_settings_the_program_is_built_from(opened, monkeypatch, capsys, argv,
                                                                                env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ask.main([IN_SCOPE, "--json", *argv]) == 0
    assert opened["settings"].expand == expected
    assert one_json_object(capsys.readouterr().out)["answer"] == "1.4 m"


def test_unknown_expand_value_exits_4(opened, capsys):
    with pytest.raises(SystemExit) as caught:
        ask.main([IN_SCOPE, "--expand", "everything"])
    assert caught.value.code == 4 and "--expand" in capsys.readouterr().err
    assert "settings" not in opened


class DraftingProgram(StubProgram):
    """Writes the draft "Quillon is 2.7 m tall." through `on_answer_text`, when given one, then replies."""

    def ask(self, question, on_answer_text=None, **kwargs):
        self.listened = on_answer_text is not None
        for piece in ("Quillon ", "is 2.7 m ", "tall."):
            if on_answer_text:
                on_answer_text(piece)
        return super().ask(question, **kwargs)


def refused(reason: str) -> Response:
    return Response(answer=REFUSAL_MESSAGE, query="q", is_refusal=True, refusal_reason=reason, mode="refused")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def on_terminal(monkeypatch) -> Terminal:
    """From here on, stdout is a terminal that keeps what is written to it (called in the test body: pytest sets
    its own capture back after fixtures)."""
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    return screen


@pytest.mark.parametrize("reply, withdrawn", [
    (lambda q: refused("unsupported_claim"), True),  # the checks refused what was on screen
    (lambda q: answer("Quillon is 1.4 m tall.", query=q), False),  # the checked answer is the draft
    (lambda q: refused("model"), False),  # the model's own refusal retracts nothing
])
def test_a_terminal_says_when_the_checked_answer_withdraws_the_draft(monkeypatch, capsys, reply, withdrawn):
    screen = on_terminal(monkeypatch)
    program = DraftingProgram(reply)
    ask.answer(program.ask, IN_SCOPE, args())
    err = capsys.readouterr().err
    assert program.listened and "Quillon is 2.7 m tall." in screen.getvalue()  # the draft was on screen
    assert ("failed the answer checks (unsupported_claim) and was withdrawn" in err) == withdrawn


def test_an_unreadable_reply_says_the_draft_could_not_be_read(monkeypatch, capsys):
    on_terminal(monkeypatch)
    ask.answer(DraftingProgram(lambda q: refused("unreadable_reply")).ask, IN_SCOPE, args())
    err = capsys.readouterr().err
    assert "could not be read as an answer and was withdrawn" in err and "failed the answer checks" not in err


def test_a_quote_in_place_of_an_unreadable_reply_says_so(monkeypatch, capsys):
    on_terminal(monkeypatch)
    quote = Response(answer="The book says: \u201cQuillon is 1.4 m tall.\u201d", query="q", mode="quoted")
    ask.answer(DraftingProgram(lambda q: quote).ask, IN_SCOPE, args())
    assert "could not be read; below is the book's own sentence" in capsys.readouterr().err


@pytest.mark.parametrize("options", [{}, {"json": True}])
def test_piped_or_json_output_streams_nothing(capsys, options):
    program = DraftingProgram(lambda q: answer("Quillon is 1.4 m tall.", query=q))
    ask.answer(program.ask, IN_SCOPE, args(**options))
    assert not program.listened


# -- text from the book on the terminal, a closed pipe, chat input that is not UTF-8 (issue 31) -----------------

HOSTILE = ("Quillon is 1.4 m tall.\x1b[2J\x1b[31m [red]red[/red] [link=https://evil.example]here[/link] "
           "\x1b]0;pwned\x07\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x9b2J")
HOSTILE_SEQUENCES = ("\x1b[2J", "\x1b[31m", "\x1b]0;", "\x1b]8;;", "\x07", "\x9b")


def hostile_response() -> Response:
    citation = Citation("\x1b]0;pwned\x07Welcome", "Welcome \x1b[2J[bold]x[/bold]", "/docs/intro\x1b]8;;https://evil\x1b\\",
                        "intro.md", "general", "c1\x1b[31m", 0.7)
    passage = {"n": 1, "chunk_id": "c1\x1b[31m", "score": 0.5, "dense_score": 0.4, "sparse_score": None,
               "source": "intro\x1b[2J.md", "heading": "Welcome \x1b]0;pwned\x07"}
    return Response(answer=HOSTILE, query="q", citations=[citation], mode="extractive", passages=[passage],
                    standalone_query="how tall\x1b[2J")


@pytest.mark.parametrize("where", ["piped", "terminal"])
def test_escape_sequences_in_the_book_are_shown_inert_and_brackets_are_no_markup(monkeypatch, capsys, where):
    screen = on_terminal(monkeypatch) if where == "terminal" else None
    ask.show(hostile_response(), args(verbose=True))
    out = screen.getvalue() if screen else capsys.readouterr().out
    assert not [seq for seq in HOSTILE_SEQUENCES if seq in out]  # rich's own colours on a terminal are fine
    assert "\\x1b[2J" in out and "\\x1b]0;pwned\\x07" in out and "\\x9b2J" in out  # shown, not acted on
    assert "[red]red[/red]" in out and "[link=https://evil.example]here[/link]" in out  # the brackets, as written
    assert "[bold]x[/bold]" in out


def test_json_output_escapes_control_characters_by_jsons_rules(capsys):
    ask.show(hostile_response(), args(json=True))
    out = capsys.readouterr().out
    assert not [c for c in out if ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f]
    assert "\\u001b[2J" in out and "\\u009b" in out
    assert one_json_object(out)["answer"] == HOSTILE  # nothing lost: a reader of the JSON gets the text


def test_a_chat_line_that_is_not_utf8_is_said_so_and_the_chat_goes_on(monkeypatch, capsys):
    """The bytes a terminal set to Latin-1 sends for "é" (0xe9), on a real text stream as stdin."""
    program = StubProgram(lambda q: answer(f"about {q}", query=q))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"first\nCaf\xe9 hours?\nsecond\n"), encoding="utf-8"))
    assert ask.chat(program, args()) == 0
    out, err = capsys.readouterr()
    assert "(that line is not valid UTF-8 text: 'Caf\\\\xe9 hours?'; retype it" in err
    assert [q for q, _ in program.calls] == ["first", "second"]
    assert "about second" in out


def test_an_error_in_a_chat_turn_is_scrubbed_and_inert(monkeypatch, capsys):
    program = StubProgram(lambda q: AgentError(f"model at http://u:chat-pw-77@h:1 said \x1b]0;pwned\x07 for {q}"))
    feed(monkeypatch, "boom")
    assert ask.chat(program, args()) == 0
    err = capsys.readouterr().err
    assert "error: model at http://***@h:1 said \\x1b]0;pwned\\x07 for boom" in err
    assert "chat-pw-77" not in err and "\x1b" not in err


@pytest.mark.parametrize("options", [[], ["--json"]])
def test_a_reader_that_stops_reading_ends_ask_quietly_with_0(env, first_run, options):
    """`ask.py ... | head -1` with head gone before the answer is printed: no error, exit 0."""
    child = subprocess.Popen([sys.executable, str(ROOT / "ask.py"), IN_SCOPE, *options], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, cwd=Path(env["BOOKRAG_DATA_DIR"]).parent)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=180) == 0, stderr
    assert "error" not in stderr and "Traceback" not in stderr and "Exception ignored" not in stderr


class CarelessProvider(_Handler):
    """An OpenAI-compatible provider whose errors echo what it was sent: the Authorization header, decoded when
    it is Basic, and the request's path with its query string."""

    def _reply(self, server, body, status):
        if status == 200:
            return super()._reply(server, body, status)
        sent = self.headers.get("Authorization", "")
        scheme, _, value = sent.partition(" ")
        decoded = base64.b64decode(value).decode("utf-8", "replace") if scheme == "Basic" else value
        message = f"denied {decoded} ({sent}) at {self.path}"
        self._send(status, json.dumps({"error": {"message": message, "type": "auth_error"}}).encode(), "application/json")


@pytest.mark.parametrize("credentials, query, secrets", [
    ("alice:Hunter2@Secret9@", "", ["Hunter2", "Secret9", base64.b64encode(b"alice:Hunter2@Secret9").decode()]),
    ("", "?api_key=QuerySecret987654", ["QuerySecret987654"]),
], ids=["unencoded-at-in-password", "key-in-query"])
def test_an_lm_error_shows_none_of_the_credentials_of_the_api_base(env, first_run, credentials, query, secrets):
    """A generated answer from a provider that fails and echoes the credentials it was sent: stderr and --json
    carry none of them."""
    with serving(FakeOpenAI("unused")) as fake:
        fake.RequestHandlerClass = CarelessProvider
        fake.script = [(401, 0.0)]
        api_base = f"http://{credentials}127.0.0.1:{fake.server_port}/v1{query}"
        environment = {k: v for k, v in env.items() if k != "OPENAI_API_BASE"}
        result = run_ask(environment, IN_SCOPE, "--json", BOOKRAG_ANSWER_MODE="generated", BOOKRAG_LM="openai/fake-model",
                         BOOKRAG_LM_API_BASE=api_base, BOOKRAG_LM_RETRIES="0")
    assert result.returncode == 3, result.stderr
    assert fake.requests, "the provider was never asked: the echo was not tested"
    assert "Language model openai/fake-model failed" in result.stderr and "denied" in result.stderr
    for secret in secrets:
        assert secret not in result.stderr and secret not in result.stdout


def test_a_draft_streamed_to_the_terminal_shows_the_books_escape_sequences_inert(monkeypatch):
    class Quoting(StubProgram):
        def ask(self, question, on_answer_text=None, **kwargs):
            on_answer_text("Quillon\x1b[2J is 1.4 m tall.\x1b]0;pwned\x07")
            return super().ask(question, **kwargs)

    screen = on_terminal(monkeypatch)
    ask.answer(Quoting(lambda q: answer("Quillon is 1.4 m tall.", query=q)).ask, IN_SCOPE, args())
    assert "\x1b[2J" not in screen.getvalue() and "\x1b]0;" not in screen.getvalue()
    assert "Quillon\\x1b[2J is 1.4 m tall." in screen.getvalue()
