"""Every command line fails the same way: a known error prints one line and exits with its code (2 configuration,
3 store/embedding/LM, 4 bad arguments or question file), anything else one line and exit 70 (its traceback with
--verbose only). Subprocesses, as a user runs them; all of these fail before any model loads."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT, SMALL_BOOK, clean_env, run_script, write_book

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE = 24, 1  # <linux/prctl.h>, <linux/capability.h>
CAP_DAC_READ_SEARCH, CAP_FOWNER, NOBODY = 2, 3, 65534


@pytest.fixture
def book(tmp_path):
    return write_book(tmp_path / "book", SMALL_BOOK)


def env_for(tmp_path, **extra: str) -> dict[str, str]:
    return clean_env(**{"BOOKRAG_DATA_DIR": str(tmp_path / "data"), "BOOKRAG_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
                        **extra})


def one_line_error(result, code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return result.stderr


def test_a_question_that_is_not_utf8_exits_4_showing_the_bad_byte(tmp_path):
    """`python ask.py $'How tall is \\xff Kestrel?'`: the shell passes a byte that is not UTF-8."""
    result = subprocess.run([sys.executable, str(PROJECT_ROOT / "ask.py"), b"How tall is \xff Kestrel?"],
                            cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=60, check=False)
    stderr = one_line_error(result, 4)
    assert "argument question is not valid UTF-8 text: 'How tall is \\\\xff Kestrel?'" in stderr


@pytest.mark.parametrize("script", ["ask.py", "ingest.py"])
@pytest.mark.parametrize("variable, value, message", [
    ("QDRANT_URL", "not a url", "QDRANT_URL must be an http:// or https:// URL, got 'not a url'"),
    ("BOOKRAG_LM", "nonsense", "BOOKRAG_LM must be local or a LiteLLM model string"),
])
def test_a_malformed_setting_exits_2_before_anything_runs(tmp_path, book, script, variable, value, message):
    args = [book] if script == "ingest.py" else ["What is a node?", "--book", book]
    stderr = one_line_error(run_script(script, *args, cwd=tmp_path, env=env_for(tmp_path, **{variable: value})), 2)
    assert message in stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("script", ["ask.py", "ingest.py"])
@pytest.mark.parametrize("where", ["the-file", "under-the-file"])
def test_a_data_dir_that_is_a_file_exits_2_naming_it(tmp_path, book, script, where):
    file = tmp_path / "data.txt"
    file.write_text("not a folder")
    data_dir = file if where == "the-file" else file / "data"
    args = [book] if script == "ingest.py" else ["What is a node?", "--book", book]
    result = run_script(script, *args, cwd=tmp_path, env=env_for(tmp_path, BOOKRAG_DATA_DIR=str(data_dir)))
    assert f"BOOKRAG_DATA_DIR {data_dir} is not a folder: {file} is a file" in one_line_error(result, 2)


def as_an_ordinary_user():
    """A preexec_fn that makes a root child meet file permissions like any user (it drops CAP_DAC_OVERRIDE from
    the bounding set before exec); for any other user, permissions bite already."""
    if os.geteuid() != 0:
        return None

    def drop_override():
        if ctypes.CDLL(None, use_errno=True).prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")

    return drop_override


@pytest.mark.parametrize("script", ["ask.py", "ingest.py"])
def test_a_read_only_data_folder_exits_2_naming_it(tmp_path, book, script):
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    args = [book] if script == "ingest.py" else ["What is a node?", "--book", book]
    try:
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / script), *map(str, args)], cwd=tmp_path,
                                env=env_for(tmp_path), capture_output=True, text=True, timeout=60,
                                preexec_fn=as_an_ordinary_user(), check=False)
    except subprocess.SubprocessError as exc:  # no CAP_SETPCAP to drop a capability with
        pytest.skip(f"cannot run a child without root's write override here: {exc}")
    finally:
        data.chmod(0o755)
    stderr = one_line_error(result, 2)
    assert f"BOOKRAG_DATA_DIR {data} is read-only" in stderr


@pytest.mark.parametrize("where", ["the-file", "under-the-file"])
def test_a_dspy_cache_dir_that_is_a_file_exits_2_before_anything_is_indexed(tmp_path, book, where):
    file = tmp_path / "cache.txt"
    file.write_text("not a folder")
    cache = file if where == "the-file" else file / "dspy"
    result = run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path,
                        env=env_for(tmp_path, BOOKRAG_DSPY_CACHE_DIR=str(cache)))
    stderr = one_line_error(result, 2)
    assert f"BOOKRAG_DSPY_CACHE_DIR {cache} is not a folder: {file} is a file; point BOOKRAG_DSPY_CACHE_DIR at" in stderr
    assert not (tmp_path / "data" / "qdrant").exists()


def test_a_read_only_dspy_cache_dir_exits_2_before_anything_is_indexed(tmp_path, book):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / "ask.py"), "What is a node?", "--book", str(book)],
                                cwd=tmp_path, env=env_for(tmp_path, BOOKRAG_DSPY_CACHE_DIR=str(folder)),
                                capture_output=True, text=True, timeout=60, preexec_fn=as_an_ordinary_user(),
                                check=False)
    except subprocess.SubprocessError as exc:  # no CAP_SETPCAP to drop a capability with
        pytest.skip(f"cannot run a child without root's write override here: {exc}")
    finally:
        folder.chmod(0o755)
    assert f"BOOKRAG_DSPY_CACHE_DIR {folder} is read-only" in one_line_error(result, 2)
    assert not (tmp_path / "data" / "qdrant").exists()


def test_a_dspy_cache_dir_holding_other_files_exits_2_and_keeps_its_mode(tmp_path, book):
    """The cache makes its folder private (0700): a folder of the user's (their home, /tmp) must not be."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("the user's own file")
    shared.chmod(0o755)
    result = run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path,
                        env=env_for(tmp_path, BOOKRAG_DSPY_CACHE_DIR=str(shared)))
    assert f"BOOKRAG_DSPY_CACHE_DIR {shared} holds other files (notes.txt)" in one_line_error(result, 2)
    assert shared.stat().st_mode & 0o777 == 0o755 and sorted(p.name for p in shared.iterdir()) == ["notes.txt"]


def test_a_dspy_cache_dir_of_another_user_exits_2_naming_it(tmp_path, book):
    """Writable by all (like /tmp), but not ours to make private: chmod fails."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    os.chown(shared, NOBODY, NOBODY)
    try:
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / "ask.py"), "What is a node?", "--book", str(book)],
                                cwd=tmp_path, env=env_for(tmp_path, BOOKRAG_DSPY_CACHE_DIR=str(shared)),
                                capture_output=True, text=True, timeout=120,
                                preexec_fn=as_an_ordinary_user_without(CAP_FOWNER), check=False)
    except subprocess.SubprocessError as exc:  # no CAP_SETPCAP to drop a capability with
        pytest.skip(f"cannot run a child without root's chmod override here: {exc}")
    assert (f"BOOKRAG_DSPY_CACHE_DIR {shared} cannot hold the response cache (Operation not permitted): choose a "
            "folder of your own that you can write") in one_line_error(result, 2)
    assert shared.stat().st_mode & 0o777 == 0o777


def test_a_dotenv_that_is_not_utf8_exits_2_naming_the_file_and_line(tmp_path, book):
    (tmp_path / ".env").write_bytes(b"# settings\nBOOKRAG_TOP_K=3\nBOOKRAG_BASE_URL=/caf\xe9\n")
    stderr = one_line_error(run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path,
                                       env=env_for(tmp_path)), 2)
    assert f"{tmp_path / '.env'}:3: not UTF-8 text (byte 22 of the line); re-save the file as UTF-8" in stderr


def as_an_ordinary_user_without(*capabilities: int):
    """`as_an_ordinary_user`, and without these overrides of root's either: CAP_DAC_READ_SEARCH (read any file),
    CAP_FOWNER (chmod any file)."""
    drop_write_override = as_an_ordinary_user()
    if drop_write_override is None:
        return None

    def drop_all():
        drop_write_override()
        for capability in capabilities:
            if ctypes.CDLL(None, use_errno=True).prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")

    return drop_all


def test_a_dotenv_that_cannot_be_read_exits_2_naming_it(tmp_path, book):
    dotenv = tmp_path / ".env"
    dotenv.write_text("BOOKRAG_TOP_K=3\n")
    dotenv.chmod(0o000)
    try:
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / "ask.py"), "What is a node?", "--book", str(book)],
                                cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=60,
                                preexec_fn=as_an_ordinary_user_without(CAP_DAC_READ_SEARCH), check=False)
    except subprocess.SubprocessError as exc:  # no CAP_SETPCAP to drop a capability with
        pytest.skip(f"cannot run a child without root's read override here: {exc}")
    finally:
        dotenv.chmod(0o600)
    assert f"cannot read {dotenv} (Permission denied): make it readable, or remove it" in one_line_error(result, 2)


def test_misspelt_variables_are_warned_about_once_naming_the_setting_and_no_value(tmp_path, book):
    (tmp_path / ".env").write_text("BOOKRAG_ANSWERMODE=extractive\n")
    env = env_for(tmp_path, BOOKRAG_TOPK="3", QDRANT_APIKEY="qdrant-secret-91b2", BOOKRAG_FOO="1",
                  QDRANT__SERVICE__API_KEY="x", COHERE_TIMEOUT="9")
    result = run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING bookrag.config:")]
    assert warnings == [
        "WARNING bookrag.config: BOOKRAG_ANSWERMODE is not a bookrag setting; did you mean BOOKRAG_ANSWER_MODE?",
        "WARNING bookrag.config: BOOKRAG_FOO is not a bookrag setting; see the README's configuration table",
        "WARNING bookrag.config: BOOKRAG_TOPK is not a bookrag setting; did you mean BOOKRAG_TOP_K?",
        "WARNING bookrag.config: QDRANT_APIKEY is not a bookrag setting; did you mean QDRANT_API_KEY?",
    ]
    assert "qdrant-secret-91b2" not in result.stderr + result.stdout


def test_a_default_artifact_without_its_manifest_exits_2_before_anything_is_indexed(tmp_path, book):
    """As `--program` on the same folder does, not a silent zero-shot answer."""
    default = tmp_path / "artifacts" / "book"
    default.mkdir(parents=True)
    (default / "program.json").write_text("{}")
    stderr = one_line_error(run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path,
                                       env=env_for(tmp_path)), 2)
    assert f"error: {default / 'manifest.json'} is missing: {default}, the compiled program used by default" in stderr
    assert not (tmp_path / "data" / "qdrant").exists()


@pytest.mark.parametrize("variables, message", [
    ({"QDRANT_URL": "http://u:pw@[::1"},
     "QDRANT_URL is not a URL a client can read: check its host (an IPv6 address goes in [ ]), got 'http://***@[::1'"),
    ({"QDRANT_URL": "http://127.0.0.1:99999"},
     "QDRANT_URL must name a port from 1 to 65535, got 'http://127.0.0.1:99999'"),
    ({"QDRANT_HOST": "127.0.0.1", "QDRANT_PORT": "99999"}, "QDRANT_PORT must be between 1 and 65535, got 99999"),
])
def test_a_qdrant_address_no_client_can_use_exits_2_naming_it_and_not_its_password(tmp_path, book, variables,
                                                                                     message):
    """These exited 70, "a bug in bookrag", from inside the Qdrant client."""
    result = run_script("ask.py", "What is a node?", "--book", book, cwd=tmp_path, env=env_for(tmp_path, **variables))
    stderr = one_line_error(result, 2)
    assert message in stderr and "u:pw" not in stderr
    assert not (tmp_path / "data").exists()


def compiled_program(book, folder):
    """An artifact folder for `book` as optimize.py writes it (a refusal gate only), its manifest matching what the
    tests configure."""
    folder.mkdir(parents=True)
    manifest = {"bookrag_version": "test", "dspy_version": "test", "lm": "local", "embedder": "minilm384",
                "collection": "book__minilm384", "book": str(book), "index_fingerprint": "0" * 16,
                "answer_mode": "extractive"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "program.json").write_text("{}")
    return folder


@pytest.mark.parametrize("name", ["manifest.json", "program.json"])
def test_an_artifact_file_nested_200000_deep_exits_2_naming_it(tmp_path, book, name):
    """Reading it raised RecursionError: exit 70."""
    artifact = compiled_program(book, tmp_path / "compiled")
    (artifact / name).write_text("[" * 200_000 + "]" * 200_000)
    result = run_script("ask.py", "What is a node?", "--book", book, "--program", artifact, cwd=tmp_path,
                        env=env_for(tmp_path), timeout=180)
    stderr = one_line_error(result, 2)
    assert f"error: {artifact / name} is nested too deeply to read: it was hand-edited or is not from bookrag" in stderr


def test_a_module_the_book_does_not_have_exits_4_listing_the_modules_it_has(tmp_path, book):
    """It was answered as a refusal (exit 1) saying only that modules are named as in citations."""
    result = run_script("ask.py", "What is a node?", "--book", book, "--module", "ros", cwd=tmp_path,
                        env=env_for(tmp_path), timeout=180)
    stderr = one_line_error(result, 4)
    assert f"error: --module 'ros' is not a module of {book}; its modules: general, ros2, sim (named as in " \
        "citations)" in stderr


def test_an_embedding_cache_that_cannot_be_opened_exits_3_naming_it(tmp_path, book):
    """The sqlite error the issue met in a read-only folder, made without permissions: a folder where the file
    belongs."""
    cache = tmp_path / "data" / "embedding-cache.sqlite"
    cache.mkdir(parents=True)
    stderr = one_line_error(run_script("ingest.py", book, cwd=tmp_path, env=env_for(tmp_path)), 3)
    assert f"the embedding cache {cache} cannot be used" in stderr and "BOOKRAG_DATA_DIR" in stderr


def test_an_index_folder_that_cannot_be_written_exits_3_naming_it(tmp_path, book):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "qdrant").write_text("a file where the index folder belongs")
    stderr = one_line_error(run_script("ingest.py", book, cwd=tmp_path, env=env_for(tmp_path)), 3)
    assert f"cannot write in the index folder {tmp_path / 'data' / 'qdrant'}" in stderr


def test_a_jsonl_question_file_that_is_not_utf8_exits_4_naming_the_line(tmp_path, book):
    questions = tmp_path / "questions.jsonl"
    questions.write_bytes(b'{"id": "a", "question": "What is a node?", "answerable": true}\n'
                          b'{"id": "b", "question": "How tall is \xff Kestrel?", "answerable": true}\n')
    result = run_script("evaluate.py", "--book", book, "--questions", questions, "--zero-shot", cwd=tmp_path,
                        env=env_for(tmp_path))
    assert f"{questions}:2: not UTF-8 text" in one_line_error(result, 4)


def test_optimize_with_only_answerable_train_questions_exits_4(tmp_path, book):
    questions = tmp_path / "questions.csv"
    questions.write_text("id,question,answerable,split\nq1,What is a node?,true,train\n"
                         "q2,What is Gazebo?,true,train\nq3,What launches nodes?,true,dev\n")
    result = run_script("optimize.py", "--book", book, "--questions", questions, cwd=tmp_path, env=env_for(tmp_path))
    assert "needs answerable and must-refuse (answerable=false) questions in its train split" in \
        one_line_error(result, 4)


UNEXPECTED = """
import sys
from bookrag.cli import run, setup_logging
setup_logging(verbose="--verbose" in sys.argv)
def main():
    raise RuntimeError("disk on fire at http://user:pw-5f0e@host:1")
run(main)
"""


def test_an_unexpected_error_is_one_scrubbed_line_and_exit_70_with_the_traceback_only_when_verbose(tmp_path):
    def unexpected(*args: str):
        return subprocess.run([sys.executable, "-c", UNEXPECTED, *args], cwd=PROJECT_ROOT, env=env_for(tmp_path),
                              capture_output=True, text=True, timeout=60, check=False)

    quiet = unexpected()
    assert quiet.returncode == 70
    assert quiet.stderr == ("error: unexpected RuntimeError: disk on fire at http://***@host:1 (a bug in bookrag; "
                            "--verbose shows the traceback)\n")
    verbose = unexpected("--verbose")
    assert verbose.returncode == 70
    assert "Traceback (most recent call last)" in verbose.stderr and ", in main\n" in verbose.stderr
    assert "pw-5f0e" not in verbose.stderr


PRINTS_TO_A_CLOSED_PIPE = """
import sys, time
from bookrag.cli import run
def main():
    time.sleep(0.5)  # the reader is gone by then
    for n in range(3):
        print("line", n)
    return 0
run(main)
"""


def test_a_reader_that_stopped_reading_ends_the_run_quietly_with_0(tmp_path):
    """`... | head -1` closes the pipe: no error, no traceback, exit 0, as Unix tools do."""
    child = subprocess.Popen([sys.executable, "-c", PRINTS_TO_A_CLOSED_PIPE], cwd=PROJECT_ROOT, env=env_for(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0, stderr
    assert stderr == ""


BREAKS_ANOTHER_PIPE = """
from bookrag.cli import run
def main():
    raise BrokenPipeError(32, "Broken pipe")  # as a write to a server's socket would
run(main)
"""


def test_a_broken_pipe_that_is_not_stdout_is_no_quiet_success(tmp_path):
    result = subprocess.run([sys.executable, "-c", BREAKS_ANOTHER_PIPE], cwd=PROJECT_ROOT, env=env_for(tmp_path),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 70
    assert result.stderr.startswith("error: unexpected BrokenPipeError: [Errno 32] Broken pipe")


QUOTES_A_BOOK = """
from bookrag.cli import run
from bookrag.errors import StoreError
def main():
    raise StoreError("page '\\x1b]0;pwned\\x07\\x1b[2JIntro' could not be stored")
run(main)
"""


def test_an_error_line_quoting_a_book_shows_its_escape_sequences_inert(tmp_path):
    result = subprocess.run([sys.executable, "-c", QUOTES_A_BOOK], cwd=PROJECT_ROOT, env=env_for(tmp_path),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 3
    assert result.stderr == "error: page '\\x1b]0;pwned\\x07\\x1b[2JIntro' could not be stored\n"
