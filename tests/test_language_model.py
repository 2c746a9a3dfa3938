"""make_lm against a fake OpenAI-compatible server on 127.0.0.1: answers, retries, failures, the token cap."""

from __future__ import annotations

import base64
import socket

import dspy
import pytest
from dspy.clients.cache import Cache
from fake_openai import FakeOpenAI, serving

from bookrag.config import Settings
from bookrag.errors import AgentError, ConfigError
from programs.lm.chat_adapter import BookChatAdapter
from programs.lm.language_model import configure_cache, lm_errors, lm_mode, make_lm

API_KEY = "sk-test-0123456789abcdef"
ANSWER = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"


@pytest.fixture
def server():
    with serving(FakeOpenAI(ANSWER)) as fake:
        yield fake


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)  # would route DSPy around the fake server
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # price from the bundled table, no download
    # No shared response cache: each test must reach the server (and never writes to ~/.dspy_cache).
    monkeypatch.setitem(vars(dspy), "cache", Cache(False, False, None))


def hosted(tmp_path, server=None, **changes) -> Settings:
    connection = {"lm_api_base": server.api_base} if server else {}
    return Settings(**{"data_dir": tmp_path, "lm": "openai/fake-model", "lm_retries": 2, "lm_timeout": 5.0,
                       **connection, **changes})


def ask(lm) -> dspy.Prediction:
    with dspy.context(lm=lm), lm_errors():
        return dspy.Predict("question -> answer")(question="What is the capital of France?")


def test_predict_returns_the_servers_answer(server, tmp_path):
    lm = make_lm(hosted(tmp_path, server))
    assert ask(lm).answer == "Paris"
    assert server.requests[0]["model"] == "fake-model"
    assert lm.history[-1]["usage"]["completion_tokens"] == 5


def test_max_tokens_cap_reaches_the_server(server, tmp_path):
    ask(make_lm(hosted(tmp_path, server, lm_max_tokens=123)))
    body = server.requests[0]
    # DSPy 3.4's native OpenAI route spells the cap max_completion_tokens; LiteLLM spells it max_tokens.
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 123


def test_the_token_cap_reaches_a_server_that_honours_only_max_tokens(server, tmp_path):
    """llama.cpp's server (and others) ignore `max_completion_tokens`: uncapped, a small model ran to 6,928 tokens."""
    ask(make_lm(hosted(tmp_path, server, lm_max_tokens=123)))
    assert server.requests[0]["max_tokens"] == 123


def test_a_reply_that_failed_to_parse_is_asked_again_not_replayed_from_the_cache(server, tmp_path):
    lm = make_lm(hosted(tmp_path, server))  # the project's disk cache, on
    server.content = "I would rather not say."
    with pytest.raises(AgentError, match="replied without the expected fields"):
        ask_with_book_adapter(lm)
    server.content = ANSWER  # the server is fixed
    assert ask_with_book_adapter(lm).answer == "Paris"
    assert len(server.requests) == 2
    assert ask_with_book_adapter(lm).answer == "Paris"  # a good reply is cached as usual
    assert len(server.requests) == 2


def ask_with_book_adapter(lm) -> dspy.Prediction:
    with dspy.context(lm=lm, adapter=BookChatAdapter()), lm_errors():
        return dspy.Predict("question -> answer")(question="What is the capital of France?")


def test_rate_limit_is_retried(server, tmp_path):
    server.script = [(429, 0.0)]
    assert ask(make_lm(hosted(tmp_path, server))).answer == "Paris"
    assert len(server.requests) == 2


def test_persistent_server_error_becomes_agent_error(server, tmp_path):
    server.script = [(500, 0.0)] * 10
    with pytest.raises(AgentError, match="openai/fake-model") as caught:
        ask(make_lm(hosted(tmp_path, server, lm_retries=2)))
    assert len(server.requests) == 3  # one call and DSPy's two retries
    assert "500" in str(caught.value)


@pytest.mark.parametrize("fault, kind", [
    ("nothing listening", "connection refused"),
    ("an HTML page with 200", "the reply is not JSON"),
    ("500", "server, HTTP 500"),
])
def test_the_error_says_what_happened_not_http_500_for_every_fault(server, tmp_path, fault, kind):
    """LiteLLM reports the first two as HTTP 500 too, which no server sent."""
    api_base = f"http://127.0.0.1:{_closed_port()}/v1" if fault == "nothing listening" else server.api_base
    server.html = "<html><body>Welcome to nginx!</body></html>" if fault.startswith("an HTML") else None
    server.script = [(500, 0.0)] if fault == "500" else []
    with pytest.raises(AgentError) as caught:
        ask(make_lm(hosted(tmp_path, lm_api_base=api_base, lm_retries=0)))
    assert f"Language model openai/fake-model failed ({kind}): " in str(caught.value)
    assert ("HTTP 500" in str(caught.value)) is (fault == "500")


def test_timeout_becomes_agent_error_naming_the_variable_that_raises_it(server, tmp_path):
    server.script = [(200, 3.0)]
    with pytest.raises(AgentError, match="openai/fake-model timed out") as caught:
        ask(make_lm(hosted(tmp_path, server, lm_timeout=0.3, lm_retries=0)))
    assert "raise BOOKRAG_LM_TIMEOUT" in str(caught.value)
    assert "Timeouts(" not in str(caught.value)  # the engine's internal knob, not one a user can turn


@pytest.mark.parametrize("reachable", [True, False], ids=["fake-server", "refused"])
def test_credentials_in_the_api_base_url_never_appear_in_the_error(server, tmp_path, reachable):
    server.script = [(500, 0.0)]  # reachable, it fails: with userinfo in the URL the error must still hide it
    port = server.server_port if reachable else _closed_port()
    api_base = f"http://bookrag-user:hunter2-url-secret@127.0.0.1:{port}/v1"
    with pytest.raises(AgentError) as caught:
        ask(make_lm(hosted(tmp_path, lm_api_base=api_base, lm_retries=0)))
    assert "127.0.0.1" in str(caught.value)
    assert "hunter2-url-secret" not in str(caught.value) and "bookrag-user" not in str(caught.value)


def test_basic_credentials_a_server_echoes_from_the_api_base_url_never_appear_in_the_error(server, tmp_path):
    """The client sends the URL's userinfo as `Authorization: Basic base64(user:password)`; this server's 500 body
    echoes that header."""
    server.script = [(500, 0.0)]
    api_base = f"http://bookrag-user:hunter2pass@127.0.0.1:{server.server_port}/v1"
    with pytest.raises(AgentError) as caught:
        ask(make_lm(hosted(tmp_path, lm_api_base=api_base, lm_retries=0)))
    assert "failed for Basic ***" in str(caught.value)  # the echo is kept, masked...
    assert base64.b64encode(b"bookrag-user:hunter2pass").decode() not in str(caught.value)  # ...its value is not


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_api_key_never_appears_in_agent_error(server, tmp_path):
    server.script = [(401, 0.0)]
    with pytest.raises(AgentError) as caught:
        ask(make_lm(hosted(tmp_path, server)))
    assert "failed for Bearer" in str(caught.value)  # the provider's message is kept...
    assert API_KEY not in str(caught.value)  # ...without the key it echoed
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_unparseable_reply_becomes_agent_error(server, tmp_path):
    server.content = "I would rather not say."
    with pytest.raises(AgentError, match=r"openai/fake-model replied without the expected fields \(answer\)"):
        ask(make_lm(hosted(tmp_path, server)))


def test_configure_cache_answers_repeats_from_the_project_dir(server, tmp_path):
    settings = hosted(tmp_path, server)
    configure_cache(settings)
    lm = make_lm(settings)
    assert ask(lm).answer == ask(lm).answer == "Paris"
    assert len(server.requests) == 1
    assert dspy.cache.disk_cache_dir == str(tmp_path / "dspy-cache")
    assert any((tmp_path / "dspy-cache").iterdir())


def test_make_lm_turns_the_project_cache_on(server, tmp_path):
    """Every program gets its LM from make_lm (ask.py, load_program): the cache needs no separate call."""
    lm = make_lm(hosted(tmp_path, server))
    assert dspy.cache.disk_cache_dir == str(tmp_path / "dspy-cache")
    assert ask(lm).answer == ask(lm).answer == "Paris"
    assert len(server.requests) == 1


def test_the_cache_on_disk_holds_no_credentials_of_the_api_base_and_is_private(server, tmp_path):
    (tmp_path / "dspy-cache").mkdir(mode=0o755)  # a folder from before: made private too
    api_base = f"http://bookrag-user:hunter2pass@127.0.0.1:{server.server_port}/v1"
    assert ask(make_lm(hosted(tmp_path, lm_api_base=api_base))).answer == "Paris"
    stored = b"".join(path.read_bytes() for path in (tmp_path / "dspy-cache").rglob("*") if path.is_file())
    assert f"***@127.0.0.1:{server.server_port}".encode() in stored  # the response was written, its server masked
    assert b"hunter2pass" not in stored and b"bookrag-user" not in stored
    assert (tmp_path / "dspy-cache").stat().st_mode & 0o777 == 0o700


def test_another_server_with_the_same_model_string_is_asked_not_replayed_from_the_cache(server, tmp_path):
    with serving(FakeOpenAI("[[ ## answer ## ]]\nLyon\n\n[[ ## completed ## ]]")) as other:
        assert ask(make_lm(hosted(tmp_path, server))).answer == "Paris"
        assert ask(make_lm(hosted(tmp_path, other))).answer == "Lyon"  # the same cache folder, another server
    assert len(server.requests) == len(other.requests) == 1


def test_the_same_server_with_other_credentials_reuses_its_cached_answers(server, tmp_path):
    """The key holds the server without its userinfo: a changed password changes no answer (and the key, though a
    hash, is made of nothing secret)."""
    for password in ("first-password", "second-password"):
        api_base = f"http://bookrag-user:{password}@127.0.0.1:{server.server_port}/v1"
        assert ask(make_lm(hosted(tmp_path, lm_api_base=api_base))).answer == "Paris"
    assert len(server.requests) == 1


def test_another_token_cap_or_temperature_is_asked_not_replayed_from_the_cache(server, tmp_path):
    lm = make_lm(hosted(tmp_path, server, lm_max_tokens=100))
    for variant in (lm, make_lm(hosted(tmp_path, server, lm_max_tokens=200)), lm.copy(temperature=0.7)):
        assert ask(variant).answer == "Paris"
    assert [body["max_tokens"] for body in server.requests] == [100, 200, 100]
    assert server.requests[-1]["temperature"] == 0.7


def local_cache_key(tmp_path, gguf) -> str:
    """The key DSPy's cache files a local model's answer to the same prompt under (no model loads)."""
    from dspy.clients.execution import IGNORED_CACHE_KEYS, prepare

    lm = make_lm(Settings(data_dir=tmp_path, local_model=gguf))
    call = prepare(lm, None, [{"role": "user", "content": "What is the capital of France?"}], {})
    return dspy.cache.cache_key(call.key(lm, False), IGNORED_CACHE_KEYS)


def test_another_local_gguf_never_shares_the_cached_answers_of_the_first(tmp_path):
    """BOOKRAG_LOCAL_MODEL pointing at another file of the same name (the model string is `local/<stem>` for both),
    or the same file replaced by another model, is another key; the same file is the same key."""
    first, second = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for path, content in ((first, b"GGUF one"), (second, b"GGUF two")):
        path.parent.mkdir()
        path.write_bytes(content)
    key = local_cache_key(tmp_path, first)
    assert local_cache_key(tmp_path, first) == key
    assert local_cache_key(tmp_path, second) != key
    first.write_bytes(b"GGUF one, re-quantized")
    assert local_cache_key(tmp_path, first) != key
    assert local_cache_key(tmp_path, None) not in (key, local_cache_key(tmp_path, second))  # the packaged model


def test_configure_cache_keeps_a_cache_already_in_that_folder(tmp_path):
    configure_cache(hosted(tmp_path))
    cache = dspy.cache
    make_lm(hosted(tmp_path))
    assert dspy.cache is cache  # its in-memory entries survive a second program


def test_api_base_comes_from_settings(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no project .env
    monkeypatch.setenv("BOOKRAG_LM_API_BASE", server.api_base)
    monkeypatch.setenv("BOOKRAG_LM", "openai/fake-model")
    assert ask(make_lm(Settings.from_env().replace(data_dir=tmp_path))).answer == "Paris"
    assert server.requests[0]["model"] == "fake-model"


def test_local_engine_gets_the_configured_threads(tmp_path):
    engine = make_lm(Settings(data_dir=tmp_path, lm_threads=1, lm_max_tokens=64)).dump_state()["engine"]["state"]
    assert engine["n_threads"] == 1 and engine["max_tokens"] == 64


def test_lm_mode_tells_local_from_hosted(tmp_path):
    assert lm_mode(make_lm(Settings(data_dir=tmp_path))) == "local"  # the model loads lazily: no llama here
    assert lm_mode(make_lm(hosted(tmp_path))) == "hosted"


def test_unusable_model_string_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="BOOKRAG_LM"):
        make_lm(Settings(data_dir=tmp_path, lm="openai/"))
