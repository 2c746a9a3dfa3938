"""Settings from the environment: the LM variables, query expansion, `.env` export, and errors that name the
variable without showing a secret."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bookrag.cli import load_settings
from bookrag.config import Settings, export_dotenv, unknown_variable_warnings
from bookrag.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
OPENAI_KEY, GEMINI_KEY = "sk-dotenv-openai-4f9a1c2e7b", "gm-dotenv-gemini-83d0b6a5c1"


def test_defaults():
    settings = Settings.from_env({})
    assert (settings.lm_timeout, settings.lm_retries, settings.lm_api_base) == (60.0, 3, None)
    assert settings.lm_threads == 2 and settings.expand is None


def test_lm_variables_are_read():
    settings = Settings.from_env({
        "BOOKRAG_LM_TIMEOUT": "12.5", "BOOKRAG_LM_RETRIES": "0", "BOOKRAG_LM_THREADS": "1",
        "BOOKRAG_LM_API_BASE": "http://127.0.0.1:8000/v1/", "BOOKRAG_EXPAND": "Parts",
    })
    assert settings.lm_timeout == 12.5 and settings.lm_retries == 0 and settings.lm_threads == 1
    assert settings.lm_api_base == "http://127.0.0.1:8000/v1"  # one spelling: no trailing slash
    assert settings.expand == "parts"


@pytest.mark.parametrize("name, value", [
    ("BOOKRAG_LM_TIMEOUT", "soon"), ("BOOKRAG_LM_TIMEOUT", "0"), ("BOOKRAG_LM_TIMEOUT", "-3"),
    ("BOOKRAG_LM_RETRIES", "two"), ("BOOKRAG_LM_RETRIES", "-1"),
    ("BOOKRAG_LM_THREADS", "0"), ("BOOKRAG_LM_THREADS", "1.5"),
    ("BOOKRAG_LM_MAX_TOKENS", "0"),
    ("BOOKRAG_LM_API_BASE", "127.0.0.1:8000"), ("BOOKRAG_EXPAND", "everything"),
])
def test_invalid_value_is_a_config_error_naming_the_variable(name, value):
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


@pytest.mark.parametrize("value, problem", [("51", "must be between 1 and 50, got 51"),
                                            ("0", "must be between 1 and 50, got 0")])
def test_top_k_outside_its_documented_range_is_a_config_error(value, problem):
    assert Settings.from_env({"BOOKRAG_TOP_K": "50"}).top_k == 50
    with pytest.raises(ConfigError, match=f"BOOKRAG_TOP_K {problem}"):
        Settings.from_env({"BOOKRAG_TOP_K": value})


@pytest.mark.parametrize("field, name", [("lm_threads", "BOOKRAG_LM_THREADS"), ("lm_retries", "BOOKRAG_LM_RETRIES"),
                                         ("lm_timeout", "BOOKRAG_LM_TIMEOUT")])
def test_values_from_flags_are_checked_too(field, name):
    with pytest.raises(ConfigError, match=name):
        Settings().replace(**{field: -1})


def test_bad_api_base_is_not_echoed():
    """A base URL may carry credentials; the error names the variable only."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"BOOKRAG_LM_API_BASE": "ftp://user:hunter2-secret@host/v1"})
    assert "BOOKRAG_LM_API_BASE" in str(caught.value) and "hunter2-secret" not in str(caught.value)


def test_cli_override_of_expand_is_validated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no project .env
    monkeypatch.delenv("BOOKRAG_EXPAND", raising=False)
    assert load_settings(expand="hyde").expand == "hyde"
    with pytest.raises(ConfigError, match="BOOKRAG_EXPAND"):
        Settings().replace(expand="bogus")


@pytest.mark.parametrize("value", ["nonsense", "gpt", "openai/", "/gpt-4o"])
def test_an_lm_without_a_provider_is_a_config_error_up_front(value):
    with pytest.raises(ConfigError, match=r"BOOKRAG_LM must be local or a LiteLLM model string provider/model"):
        Settings.from_env({"BOOKRAG_LM": value})


@pytest.mark.parametrize("value", ["local", "openai/gpt-4o-mini", "gemini/gemini-2.0-flash", "ollama_chat/qwen2.5:7b"])
def test_local_and_provider_model_strings_are_accepted(value):
    assert Settings.from_env({"BOOKRAG_LM": value}).lm == value


@pytest.mark.parametrize("value", ["not a url", "localhost:6333", "ftp://qdrant.example"])
def test_qdrant_url_must_be_an_http_url(value):
    with pytest.raises(ConfigError, match="QDRANT_URL must be an http:// or https:// URL"):
        Settings.from_env({"QDRANT_URL": value})


def test_a_bad_qdrant_url_is_shown_without_its_credentials():
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"QDRANT_URL": "admin:qdrant-pw-5e1f@qdrant.example:6333"})
    assert "qdrant-pw-5e1f" not in str(caught.value) and "***@qdrant.example:6333" in str(caught.value)


def test_data_dir_that_is_a_file_or_under_one_is_a_config_error(tmp_path):
    file = tmp_path / "data.txt"
    file.write_text("not a folder")
    for data_dir in (file, file / "data"):
        with pytest.raises(ConfigError, match=f"BOOKRAG_DATA_DIR {data_dir} is not a folder: {file} is a file"):
            Settings.from_env({"BOOKRAG_DATA_DIR": str(data_dir)})
    assert Settings.from_env({"BOOKRAG_DATA_DIR": str(tmp_path / "new" / "data")}).data_dir == tmp_path / "new" / "data"


@pytest.mark.parametrize("name", ["BOOKRAG_DSPY_CACHE_DIR", "BOOKRAG_ARTIFACTS_DIR"])
def test_a_cache_or_artifacts_dir_that_is_a_file_or_under_one_is_a_config_error(tmp_path, name):
    file = tmp_path / "notes.txt"
    file.write_text("not a folder")
    for folder in (file, file / "sub"):
        with pytest.raises(ConfigError, match=f"{name} {folder} is not a folder: {file} is a file; point {name} at"):
            Settings.from_env({"BOOKRAG_DATA_DIR": str(tmp_path / "data"), name: str(folder)})


# -- variables that are no setting -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, warning", [
    ("BOOKRAG_TOPK", "BOOKRAG_TOPK is not a bookrag setting; did you mean BOOKRAG_TOP_K?"),
    ("BOOKRAG_DATADIR", "BOOKRAG_DATADIR is not a bookrag setting; did you mean BOOKRAG_DATA_DIR?"),
    ("bookrag_top_k", "bookrag_top_k is not a bookrag setting; did you mean BOOKRAG_TOP_K?"),
    ("BOOKRAG_COHERE_API_KEY", "BOOKRAG_COHERE_API_KEY is not a bookrag setting; did you mean COHERE_API_KEY?"),
    ("BOOKRAG_FOO", "BOOKRAG_FOO is not a bookrag setting; see the README's configuration table"),
    ("QDRANT_APIKEY", "QDRANT_APIKEY is not a bookrag setting; did you mean QDRANT_API_KEY?"),
    ("QDRANT_URI", "QDRANT_URI is not a bookrag setting; did you mean QDRANT_URL?"),
    ("COHERE_KEY", "COHERE_KEY is not a bookrag setting; did you mean COHERE_API_KEY?"),
])
def test_a_misspelt_variable_gets_a_warning_naming_the_closest_setting(name, warning):
    assert unknown_variable_warnings([name, "BOOKRAG_TOP_K", "PATH"]) == [warning]


@pytest.mark.parametrize("name", ["QDRANT_GRPC_PORT", "QDRANT__SERVICE__API_KEY", "COHERE_TIMEOUT", "CO_API_KEY",
                                  "QDRANT_URL", "COHERE_API_KEY", "OPENAI_API_KEY", "HOME"])
def test_other_tools_variables_and_ours_get_no_warning(name):
    assert unknown_variable_warnings([name]) == []


def test_a_misspelt_variable_is_warned_about_once_per_process_without_its_value(caplog):
    environ = {"BOOKRAG_LM_TIMEOT": "30", "QDRANT_APIKEY_": "qdrant-secret-7c1d"}
    with caplog.at_level(logging.WARNING, logger="bookrag.config"):
        Settings.from_env(environ)
        Settings.from_env(environ)  # read again (load_program does): no second warning
    assert [r.getMessage() for r in caplog.records] == [
        "BOOKRAG_LM_TIMEOT is not a bookrag setting; did you mean BOOKRAG_LM_TIMEOUT?",
        "QDRANT_APIKEY_ is not a bookrag setting; did you mean QDRANT_API_KEY?",
    ]
    assert "qdrant-secret-7c1d" not in caplog.text


# -- .env -------------------------------------------------------------------------------------------------------

def write_dotenv(folder: Path) -> Path:
    path = folder / ".env"
    path.write_text(f"OPENAI_API_KEY={OPENAI_KEY}\nGEMINI_API_KEY={GEMINI_KEY}\nBOOKRAG_TOP_K=7\n")
    return path


def test_export_dotenv_fills_only_unset_variables(tmp_path):
    environ = {"OPENAI_API_KEY": "from-the-shell"}
    exported = export_dotenv(write_dotenv(tmp_path), environ)
    assert sorted(exported) == ["BOOKRAG_TOP_K", "GEMINI_API_KEY"]
    assert environ == {"OPENAI_API_KEY": "from-the-shell", "GEMINI_API_KEY": GEMINI_KEY, "BOOKRAG_TOP_K": "7"}


def test_from_env_exports_dotenv_keys_to_os_environ_without_overriding(tmp_path, monkeypatch, caplog):
    write_dotenv(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-shell")
    for name in ("GEMINI_API_KEY", "BOOKRAG_TOP_K"):  # recorded as unset, so teardown removes what .env adds
        monkeypatch.setenv(name, "x")
        monkeypatch.delenv(name)
    with caplog.at_level(logging.DEBUG):
        settings = Settings.from_env()
    assert os.environ["GEMINI_API_KEY"] == GEMINI_KEY  # where DSPy and LiteLLM read provider keys
    assert os.environ["OPENAI_API_KEY"] == "from-the-shell"  # the environment wins
    assert settings.top_k == 7
    assert GEMINI_KEY not in caplog.text and OPENAI_KEY not in caplog.text
    assert GEMINI_KEY not in repr(settings)


def test_explicit_environ_reads_no_dotenv_and_changes_nothing(tmp_path, monkeypatch):
    write_dotenv(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    monkeypatch.delenv("GEMINI_API_KEY")
    assert Settings.from_env({}).top_k == 5
    assert "GEMINI_API_KEY" not in os.environ


def test_a_dotenv_that_is_not_utf8_is_a_config_error_naming_the_file_and_line(tmp_path, monkeypatch):
    dotenv = tmp_path / ".env"
    dotenv.write_bytes(b"BOOKRAG_TOP_K=7\nOPENAI_API_KEY=sk-caf\xe9-4f9a\n")  # saved as Latin-1
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        Settings.from_env()
    assert str(caught.value) == f"{dotenv}:2: not UTF-8 text (byte 22 of the line); re-save the file as UTF-8"


# -- what importing the CLI plumbing does -----------------------------------------------------------------------

def cli_import(env: dict[str, str]) -> str:
    code = "import sys, os, bookrag.cli; assert 'dspy' not in sys.modules; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=60, check=True)
    return result.stdout.strip()


def test_cli_module_keeps_litellm_offline_before_dspy_loads():
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    assert cli_import(env) == "True"
    assert cli_import({**env, "LITELLM_LOCAL_MODEL_COST_MAP": "False"}) == "False"  # the user's choice wins
