"""The Cohere rerank stage against a fake Cohere API that speaks the real HTTP protocol (through the real SDK): in
process through an httpx transport, and for the command lines as an HTTP server on 127.0.0.1 (the SDK reads
CO_API_URL). The fake scores a passage by the share of the question's words it holds, as a cross-encoder would rank
them."""

from __future__ import annotations

import json
import logging
import re
import traceback
import uuid

import httpx
import pytest
from conftest import SMALL_BOOK, FakeEmbedder, clean_env, run_script, write_book
from fake_cohere import (
    KEY,
    CohereServer,
    FakeCohereRerank,
    cohere_reranker,
    gateway_pages_echoing_the_key,
    key_pieces_in,
    relevance,
)
from question_files import write_questions

from bookrag.config import Secret, Settings
from bookrag.errors import ConfigError, ExitCode, RetrievalError
from bookrag.questions import Question
from programs.rag.book_rag import BookRAG
from programs.refusal.calibration import calibrate_gate
from retrievers.backends import make_reranker
from retrievers.book_index import BookIndex
from retrievers.cohere_reranker import CohereReranker
from retrievers.rerank_cache import CachedReranker
from retrievers.retriever import RERANK_CANDIDATES

# -- the API calls ----------------------------------------------------------------------------------------------

def test_requests_follow_the_v2_rerank_protocol():
    fake = FakeCohereRerank()
    cohere_reranker(fake).scores("What is a node?", ["A node is a process.", "Gazebo simulates physics."])
    (request,) = fake.requests
    assert (request.method, request.url.path) == ("POST", "/v2/rerank")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert fake.reranks == [{"model": "rerank-v3.5", "query": "What is a node?",
                             "documents": ["A node is a process.", "Gazebo simulates physics."]}]


def test_scores_come_back_in_the_texts_order_though_cohere_lists_the_best_first():
    texts = ["Gazebo simulates physics.", "A node is a process.", "Nodes talk over topics: a node publishes."]
    scores = cohere_reranker(FakeCohereRerank()).scores("What is a node?", texts)
    assert scores == [relevance("What is a node?", t) for t in texts]
    assert scores[0] < scores[1]  # the order the texts were sent in, not Cohere's


def test_documents_go_in_batches_of_at_most_1000_and_come_back_in_order():
    fake = FakeCohereRerank()
    texts = [f"passage {i} " + "node " * (i % 3) for i in range(2500)]
    scores = cohere_reranker(fake).scores("node passage 7", texts)
    assert [len(body["documents"]) for body in fake.reranks] == [1000, 1000, 500]
    assert scores == [relevance("node passage 7", t) for t in texts]


def test_no_texts_make_no_request():
    fake = FakeCohereRerank()
    assert cohere_reranker(fake).scores("q", []) == []
    assert fake.requests == []


@pytest.mark.parametrize("failure", [429, 500, (502, "<html>Bad Gateway</html>"), httpx.ReadTimeout],
                         ids=["429", "500", "502-html", "read-timeout"])
def test_a_busy_service_is_retried_after_a_second(failure):
    fake, sleeps = FakeCohereRerank([failure]), []
    assert cohere_reranker(fake, sleeps=sleeps).scores("node", ["a node"]) == [relevance("node", "a node")]
    assert len(fake.requests) == 2 and sleeps == [1.0]


def test_429_every_time_fails_after_three_tries_with_backoff():
    fake, sleeps = FakeCohereRerank([429] * 10), []
    with pytest.raises(RetrievalError, match=r"Cohere reranking failed 3 times \(last: HTTP 429\)"):
        cohere_reranker(fake, sleeps=sleeps).scores("node", ["a node"])
    assert len(fake.requests) == 3 and sleeps == [1.0, 2.0]


def test_a_rejected_key_is_a_config_error_naming_cohere_api_key_at_once():
    fake, sleeps = FakeCohereRerank([401]), []
    with pytest.raises(ConfigError, match=r"Cohere rejected COHERE_API_KEY \(401\): check the key"):
        cohere_reranker(fake, sleeps=sleeps).scores("node", ["a node"])
    assert len(fake.requests) == 1 and sleeps == []


def test_a_bad_request_is_not_retried_and_names_the_rerank_model():
    fake, sleeps = FakeCohereRerank([400]), []
    with pytest.raises(RetrievalError, match=r"Cohere refused the rerank request \(HTTP 400: simulated failure\); "
                                             r"check COHERE_RERANK_MODEL \('rerank-v3.5'\)"):
        cohere_reranker(fake, sleeps=sleeps).scores("node", ["a node"])
    assert len(fake.requests) == 1 and sleeps == []


@pytest.mark.parametrize("results", [[{"index": 0, "relevance_score": 0.5}], [],
                                     [{"index": 0, "relevance_score": None}, {"index": 1, "relevance_score": 0.1}]],
                         ids=["one-missing", "none", "no-score"])
def test_a_reply_without_every_documents_score_is_malformed(results):
    def reply(request):
        return httpx.Response(200, json={"id": "x", "results": results, "meta": {}})

    reranker = CohereReranker(Secret(KEY), httpx_client=httpx.Client(transport=httpx.MockTransport(reply)))
    with pytest.raises(RetrievalError, match="not the rerank JSON it documents"):
        reranker.scores("node", ["a node", "a topic"])


QUESTION, TEXTS = "What is a node?", ["Gazebo simulates physics.", "A node is a process.", "Launch files start nodes."]


def rerank_reply(results: list[dict]) -> dict:
    """Cohere's v2 rerank reply carrying `results`."""
    return {"id": str(uuid.uuid4()), "results": results,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}


def scored(score) -> list[dict]:
    """Every text of TEXTS given the score `score(its right score)`, in Cohere's order (the right one's best first)."""
    ranked = sorted(range(len(TEXTS)), key=lambda i: -relevance(QUESTION, TEXTS[i]))
    return [{"index": i, "relevance_score": score(relevance(QUESTION, TEXTS[i]))} for i in ranked]


def indexed(*indexes) -> list[dict]:
    return [{"index": i, "relevance_score": 0.5} for i in indexes]


@pytest.mark.parametrize("results, problem", [
    (scored(lambda s: -s), "result for document 1 has relevance_score -0.745"),  # the ranking upside down
    (scored(lambda s: s + 1), "result for document 1 has relevance_score 1.745"),
    (scored(lambda s: 1e300), "result for document 1 has relevance_score 1e+300"),
    (scored(lambda s: float("nan")), "result for document 1 has relevance_score NaN"),
    (scored(lambda s: float("inf")), "result for document 1 has relevance_score Infinity"),
    (scored(lambda s: str(s)), 'result for document 1 has relevance_score "0.745"'),
    (scored(lambda s: True), "result for document 1 has relevance_score true"),
    (indexed(1, 3, 0), "result 1 has index 3 (3 documents were sent: 0 to 2)"),
    (indexed(1, -1, 0), "result 1 has index -1 (3 documents were sent: 0 to 2)"),
    (indexed(1, 0, 2, 0), "result 3 has index 0 again"),
    (indexed(1, 0), "2 results for 3 documents"),
], ids=["negative", "above-1", "1e300", "nan", "infinity", "string", "true", "index-3", "index-minus-1",
        "index-twice", "one-missing"])
def test_a_reply_with_a_score_out_of_0_to_1_or_a_bad_index_is_refused_naming_it_and_not_cached(tmp_path, results,
                                                                                                problem):
    """A score is a relevance from 0 to 1 (Cohere's documented range, and the one the refusal gate was fitted on):
    anything else would rank the passages, and stay cached after the service recovered."""
    fake = FakeCohereRerank([rerank_reply(results)])
    cache = CachedReranker(cohere_reranker(fake), tmp_path / "cache.sqlite")
    with pytest.raises(RetrievalError, match=re.escape(f"rerank request was JSON whose {problem}")) as caught:
        cache.scores(QUESTION, TEXTS)
    assert caught.value.exit_code == ExitCode.RUNTIME
    assert cache.scores(QUESTION, TEXTS) == [relevance(QUESTION, text) for text in TEXTS]  # the service recovered
    assert len(fake.reranks) == 2  # nothing of the refused reply was cached


class UncheckedCohere:
    """Cohere's reranker as it was before its replies were checked: what it returned went into the cache."""

    kind, model_id = "cohere", "rerank-v3.5"

    def scores(self, query: str, texts: list[str]) -> list[float]:
        return [1e300] * len(texts)


def test_a_score_out_of_0_to_1_an_older_bookrag_cached_is_not_served_but_asked_for_again(tmp_path):
    CachedReranker(UncheckedCohere(), tmp_path / "cache.sqlite").scores(QUESTION, TEXTS)
    fake = FakeCohereRerank()
    cache = CachedReranker(cohere_reranker(fake), tmp_path / "cache.sqlite")
    assert cache.scores(QUESTION, TEXTS) == [relevance(QUESTION, text) for text in TEXTS]
    assert cache.scores(QUESTION, TEXTS) == [relevance(QUESTION, text) for text in TEXTS]
    assert len(fake.reranks) == 1  # asked once, then served the scores that replaced the 1e300 ones


@pytest.mark.parametrize("failures", [[401], [400], [429] * 3, [httpx.ConnectError] * 3],
                         ids=["401", "400", "429", "connect-error"])
def test_the_key_never_appears_in_errors_or_logs(failures, caplog):
    reranker = cohere_reranker(FakeCohereRerank(failures, echo=True))
    assert KEY not in repr(reranker) and KEY not in str(reranker)
    with caplog.at_level(logging.DEBUG), pytest.raises((ConfigError, RetrievalError)) as caught:
        reranker.scores("node", ["a node"])
    assert KEY not in "".join(traceback.format_exception(caught.value)) and KEY not in repr(caught.value)
    assert KEY not in caplog.text


def test_a_bad_request_that_echoes_the_key_does_not_show_it():
    with pytest.raises(RetrievalError, match="HTTP 400: simulated failure for Bearer \\*\\*\\*"):
        cohere_reranker(FakeCohereRerank([400], echo=True)).scores("node", ["a node"])


def test_a_non_json_200_that_echoes_the_key_shows_no_piece_of_it():
    for page in gateway_pages_echoing_the_key():
        with pytest.raises(RetrievalError, match="HTTP 200 with a body that is not JSON") as caught:
            cohere_reranker(FakeCohereRerank([page])).scores("node", ["a node"])
        assert key_pieces_in("".join(traceback.format_exception(caught.value))) == [], page


# -- the cache --------------------------------------------------------------------------------------------------

def test_a_repeated_question_is_answered_from_the_cache_even_in_a_new_process(tmp_path):
    fake = FakeCohereRerank()
    texts = ["A node is a process.", "Gazebo simulates physics."]
    first = CachedReranker(cohere_reranker(fake), tmp_path / "cache.sqlite").scores("What is a node?", texts)
    again = CachedReranker(cohere_reranker(fake), tmp_path / "cache.sqlite")  # as a new process opens it
    assert again.scores("What is a node?", texts[::-1]) == first[::-1]
    assert len(fake.reranks) == 1


def test_the_cache_sends_only_the_passages_it_has_not_scored_for_that_question_and_model(tmp_path):
    fake = FakeCohereRerank()
    cache = CachedReranker(cohere_reranker(fake), tmp_path / "cache.sqlite")
    cache.scores("What is a node?", ["A node is a process.", "Gazebo simulates physics."])
    cache.scores("What is a node?", ["Gazebo simulates physics.", "Launch files start nodes."])
    cache.scores("What is a topic?", ["A node is a process."])  # another question: not the same pair
    other = CachedReranker(cohere_reranker(fake, model="rerank-english-v3.0"), tmp_path / "cache.sqlite")
    other.scores("What is a node?", ["A node is a process."])  # another model: not the same score
    assert [(body["query"], body["documents"], body["model"]) for body in fake.reranks] == [
        ("What is a node?", ["A node is a process.", "Gazebo simulates physics."], "rerank-v3.5"),
        ("What is a node?", ["Launch files start nodes."], "rerank-v3.5"),
        ("What is a topic?", ["A node is a process."], "rerank-v3.5"),
        ("What is a node?", ["A node is a process."], "rerank-english-v3.0"),
    ]


# -- configuration ----------------------------------------------------------------------------------------------

def test_auto_reranks_with_cohere_when_the_key_is_set_through_the_cache(tmp_path):
    reranker = make_reranker(Settings.from_env({"COHERE_API_KEY": KEY, "BOOKRAG_DATA_DIR": str(tmp_path)}))
    assert isinstance(reranker, CachedReranker) and isinstance(reranker.inner, CohereReranker)
    assert reranker.path == tmp_path / "embedding-cache.sqlite" and reranker.model_id == "rerank-v3.5"


def test_cohere_rerank_model_names_the_model():
    settings = Settings.from_env({"COHERE_API_KEY": KEY, "COHERE_RERANK_MODEL": "rerank-english-v3.0"})
    assert make_reranker(settings, cached=False).model_id == "rerank-english-v3.0"


@pytest.mark.parametrize("environ", [{}, {"BOOKRAG_RERANKER": "auto"}, {"BOOKRAG_RERANKER": "none",
                                                                         "COHERE_API_KEY": KEY}],
                         ids=["unset-key", "auto-without-key", "none"])
def test_no_key_or_none_means_no_rerank(environ, tmp_path, small_book):
    settings = Settings.from_env({**environ, "BOOKRAG_DATA_DIR": str(tmp_path / "data")})
    assert make_reranker(settings) is None
    with BookIndex(settings, small_book, embedder=FakeEmbedder()) as index:
        index.ingest(progress=False)
        assert index.retriever.reranker is None
        assert all(p.rerank_score is None for p in index.retriever.search("What is a node?", k=3))


def test_a_bad_reranker_value_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match=r"BOOKRAG_RERANKER must be auto, cohere or none, got 'coher'"):
        Settings.from_env({"BOOKRAG_RERANKER": "coher"})


def test_cohere_reranking_without_a_key_is_a_config_error_naming_both():
    with pytest.raises(ConfigError, match="BOOKRAG_RERANKER=cohere needs COHERE_API_KEY"):
        Settings.from_env({"BOOKRAG_RERANKER": "cohere"})


# -- the rerank stage -------------------------------------------------------------------------------------------

# A book of 30 short sections on robot parts, so a search has more than RERANK_CANDIDATES passages to choose from.
PARTS = ["gripper", "lidar", "wheel", "battery", "camera", "motor", "joint", "arm", "sensor", "antenna"]
LONG_BOOK = {f"{part}-{n}.md": f"# The {part} {n}\n\nThe {part} of robot {n} is checked before every run; "
             f"{'its torque limit is set in the launch file' if n == 2 else 'it is cleaned weekly'}.\n"
             for part in PARTS for n in range(3)}


@pytest.fixture
def long_index(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    with BookIndex(settings, write_book(tmp_path / "long-book", LONG_BOOK), embedder=FakeEmbedder()) as index:
        index.ingest(progress=False)
        yield index


def test_the_searchs_top_20_are_reranked_to_k_in_score_order(long_index):
    question = "Where is the torque limit of the gripper set?"
    first_stage = long_index.retriever.search(question, k=RERANK_CANDIDATES)
    fake = FakeCohereRerank()
    long_index.retriever.reranker = cohere_reranker(fake)

    passages = long_index.retriever.search(question, k=3)

    (body,) = fake.reranks  # one rerank call a search
    assert body["query"] == question and body["documents"] == [p.text_with_heading for p in first_stage]
    assert len(body["documents"]) == RERANK_CANDIDATES == 20
    kept = {p.id for p in passages}
    assert len(kept) == 3 and kept < {p.id for p in first_stage}
    assert min(p.score for p in passages) >= max(relevance(question, p.text_with_heading) for p in first_stage
                                                 if p.id not in kept)
    assert [p.score for p in passages] == [p.rerank_score for p in passages] == sorted(
        (relevance(question, p.text_with_heading) for p in first_stage), reverse=True)[:3]
    assert passages[0].source == "gripper-2.md"  # the one passage with all the question's words


def test_a_search_by_meaning_fallback_is_reranked_too(long_index):
    """BookRAG searches again by meaning when the hybrid passages miss the question's words: a second rerank call."""
    fake = FakeCohereRerank()
    long_index.retriever.reranker = cohere_reranker(fake)
    program = BookRAG(long_index.retriever, lm=None, answer_mode="extractive")
    question = "What does the machine's grasping hand weigh?"  # words the book does not use
    _, passages = program.evidence(question)
    assert [len(body["documents"]) for body in fake.reranks] == [20, 20]
    assert all(p.rerank_score is not None for p in passages)


def test_optimize_fits_the_gate_on_the_rerank_score(long_index):
    """calibrate_gate (what optimize.py runs) reads the rerank score from the program's own searches."""
    long_index.retriever.reranker = cohere_reranker(FakeCohereRerank())
    program = BookRAG(long_index.retriever, lm=None, answer_mode="extractive")
    answerable = [f"How often is the {part} of robot {n} cleaned?" for part in PARTS for n in (0, 1)]
    refused = [f"What is the {topic} of the {place}?" for topic in ("capital", "population", "climate", "anthem")
               for place in ("France", "Peru", "Kenya", "Japan", "Chile")]
    questions = [Question(id=f"a{i}", question=q, answerable=True) for i, q in enumerate(answerable)]
    questions += [Question(id=f"r{i}", question=q, answerable=False) for i, q in enumerate(refused)]
    calibrate_gate(program, questions, progress=False)
    assert program.gate.weights["top_rerank"] > 0
    assert program.gate.mean["top_rerank"] > 0


# -- the command lines, over HTTP -------------------------------------------------------------------------------

@pytest.fixture
def rerank_server(cohere_server) -> CohereServer:
    """The fake Cohere server on 127.0.0.1, answering reranks too."""
    cohere_server.fake = FakeCohereRerank()
    return cohere_server


def cohere_env(tmp_path, server: CohereServer, **extra) -> dict[str, str]:
    return clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
                     COHERE_API_KEY=KEY, CO_API_URL=server.url, **extra)


def test_ask_reranks_with_cohere_over_http(tmp_path, rerank_server):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    result = run_script("ask.py", "--book", book, "--top-k", "2", "--json", "What is a node?", cwd=tmp_path,
                        env=cohere_env(tmp_path, rerank_server))
    assert result.returncode in (0, 1), result.stderr
    (body,) = rerank_server.fake.reranks
    assert body["model"] == "rerank-v3.5" and len(body["documents"]) == 7  # every chunk of the small book
    scores = [p["score"] for p in json.loads(result.stdout)["passages"]]
    assert scores == sorted((relevance("What is a node?", d) for d in body["documents"]), reverse=True)[:2]


@pytest.mark.parametrize("failure, code", [(401, 2), (400, 3)], ids=["401-exit-2", "400-exit-3"])
def test_a_rerank_failure_exits_with_the_embedders_codes_without_the_key(tmp_path, rerank_server, failure, code):
    book = write_book(tmp_path / "book", SMALL_BOOK)
    rerank_server.fake.rerank_failures, rerank_server.fake.echo = [failure], True
    result = run_script("ask.py", "--book", book, "What is a node?", cwd=tmp_path,
                        env=cohere_env(tmp_path, rerank_server))
    assert result.returncode == code, result.stderr
    expected = {401: "error: Cohere rejected COHERE_API_KEY (401): check the key",
                400: "error: Cohere refused the rerank request (HTTP 400: simulated failure for Bearer ***)"}
    assert expected[failure] in result.stderr
    assert KEY not in result.stdout + result.stderr


def test_ask_with_a_bad_reranker_value_exits_2_naming_it(tmp_path):
    result = run_script("ask.py", "What is a node?", cwd=tmp_path,
                        env=clean_env(BOOKRAG_DATA_DIR=str(tmp_path / "data"), BOOKRAG_RERANKER="always"))
    assert result.returncode == 2
    assert "BOOKRAG_RERANKER must be auto, cohere or none, got 'always'" in result.stderr


def test_optimize_records_the_reranker_and_its_model_and_ask_refuses_another_for_a_gate_that_weighs_it(
        tmp_path, rerank_server):
    """The manifest recorded neither: a gate fitted on one model's scores ran silently with another's."""
    book = write_book(tmp_path / "book", SMALL_BOOK)
    questions = write_questions(tmp_path / "questions.csv")
    env = cohere_env(tmp_path, rerank_server, COHERE_RERANK_MODEL="rerank-english-v3.0")
    done = run_script("optimize.py", "--book", book, "--questions", questions, "--json", cwd=tmp_path, env=env,
                      timeout=300)
    assert done.returncode == 0, done.stderr
    manifest_file = tmp_path / "artifacts" / "book" / "manifest.json"
    assert json.loads(manifest_file.read_text())["reranker"] == {"kind": "cohere", "model": "rerank-english-v3.0"}
    assert KEY not in manifest_file.read_text()

    program_file = manifest_file.parent / "program.json"
    program = json.loads(program_file.read_text())
    program["gate"]["weights"]["top_rerank"] = 2.0  # as a gate fitted on rerank scores is
    program_file.write_text(json.dumps(program))
    reranks = len(rerank_server.fake.reranks)
    other = run_script("ask.py", "--book", book, "What is a node?", cwd=tmp_path, timeout=180,
                       env={**env, "COHERE_RERANK_MODEL": "rerank-english-v2.0"})
    assert other.returncode == 2
    assert (f"error: {manifest_file.parent} has a refusal gate fitted on the rerank scores of the cohere reranker "
            "rerank-english-v3.0, but the cohere reranker rerank-english-v2.0 is configured: set COHERE_API_KEY and "
            "COHERE_RERANK_MODEL=rerank-english-v3.0") in other.stderr
    assert len(rerank_server.fake.reranks) == reranks  # refused before any search
    same = run_script("ask.py", "--book", book, "What is a node?", cwd=tmp_path, timeout=180, env=env)
    assert same.returncode in (0, 1), same.stderr
    assert {body["model"] for body in rerank_server.fake.reranks} == {"rerank-english-v3.0"}
