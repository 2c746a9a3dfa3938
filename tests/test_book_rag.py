"""BookRAG end to end on a tiny book: fake embedder (hashed bag of words), embedded Qdrant in tmp_path, DummyLM.

Fast and offline: no model weights are loaded. The gate is pinned per test (`pin_gate`) where its decision is not
what is under test, so the results do not depend on how a 16-dimensional hash happens to score a question.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_book import SELECTION, SOURCES, chat_reply, generated

from bookrag.config import REFUSAL_MESSAGE, SELECTION_REFUSAL_MESSAGE
from bookrag.errors import AgentError
from programs.rag.book_rag import BookRAG, format_history, valid_citations
from programs.rag.bounded_question import MAX_QUERY_WORDS
from programs.rag.chat import Chat
from programs.refusal.refusal_gate import FEATURES, RefusalGate


def passage_texts(program, query: str, k: int) -> list[str]:
    return [p.text for p in program.retriever.search(query, k=k)]


# -- the gate ---------------------------------------------------------------------------------------------------

def test_gate_below_threshold_refuses_without_calling_the_lm(make):
    lm = DummyLM([generated()])
    program = make(lm=lm, answer_mode="generated", probability=0.3)
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.is_refusal and response.refusal_reason == "gate"
    assert response.answer == REFUSAL_MESSAGE
    assert response.gate["probability"] < response.gate["threshold"]
    assert response.gate["answerable"] is False
    assert lm.history == []  # the LM was never asked
    assert response.passages  # retrieval ran; the evidence was judged too weak


def test_gate_above_threshold_calls_the_lm(make):
    lm = DummyLM([generated()])
    response = make(lm=lm, answer_mode="generated", probability=0.7).ask("How tall is Quillon the teaching robot?")
    assert not response.is_refusal and response.answer == "Quillon is 1.4 m tall."
    assert len(lm.history) == 1


# -- generated answers: verdict and citations --------------------------------------------------------------------

def test_the_history_reads_as_earlier_questions_and_answers_not_as_chat_turns():
    history = [{"question": "What does robot_state_publisher do?", "answer": "It publishes every link's pose."},
               {"question": "On which topics?", "answer": "On /tf and /tf_static."}]
    assert format_history(history) == ("Earlier question: What does robot_state_publisher do?\n"
                                       "Earlier answer: It publishes every link's pose.\n"
                                       "Earlier question: On which topics?\nEarlier answer: On /tf and /tf_static.")
    assert format_history(()) == ""


def test_valid_citations_drops_out_of_range_duplicate_and_garbage():
    assert valid_citations([2, 0, 9, "3", "x", None, 2.0, -1, 2], n_passages=3) == [2, 3]
    assert valid_citations(None, 3) == []


def test_out_of_range_citations_are_dropped_from_the_response(make):
    program = make(lm=DummyLM([generated(citations=[1, 0, 99, 1])]), answer_mode="generated", k=3)
    response = program.ask("How tall is Quillon the teaching robot?")
    assert not response.is_refusal
    assert [c.chunk_id for c in response.citations] == [response.passages[0]["chunk_id"]]


def test_an_answer_stating_a_number_no_cited_passage_holds_is_refused(make):
    program = make(lm=DummyLM([generated(answer="Quillon is 1.9 m tall.")]), answer_mode="generated")
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.is_refusal and response.refusal_reason == "unsupported_claim"
    assert response.answer == REFUSAL_MESSAGE


def test_an_answer_without_the_number_the_question_asks_for_is_refused(make):
    program = make(lm=DummyLM([generated(answer="Quillon is quite tall for a teaching robot.")]), answer_mode="generated")
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.is_refusal and response.refusal_reason == "no_asked_value"


def test_a_question_asking_for_no_value_needs_none_in_its_answer(make):
    program = make(lm=DummyLM([generated(answer="Quillon is a teaching robot.")]), answer_mode="generated")
    response = program.ask("What is Quillon the teaching robot?")
    assert not response.is_refusal and response.answer == "Quillon is a teaching robot."


def test_an_answer_whose_claims_its_citation_holds_is_kept(make):
    program = make(lm=DummyLM([generated(answer="It is 1.4 m tall and weighs 31 kg.")]), answer_mode="generated")
    response = program.ask("How tall is Quillon the teaching robot?")
    assert not response.is_refusal and response.answer == "It is 1.4 m tall and weighs 31 kg."


def test_model_saying_unanswerable_gives_the_refusal_message(make):
    program = make(lm=DummyLM([generated(answer="Probably 2 m.", answerable=False)]), answer_mode="generated")
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.is_refusal and response.refusal_reason == "model"
    assert response.answer == "I couldn't find information about that in the book."
    assert response.citations == [] and response.confidence == "none"


def test_answer_without_a_valid_citation_and_no_value_to_cite_by_is_refused(make):
    program = make(lm=DummyLM([generated(answer="It was built for teaching.", citations=[7, 9])]),
                   answer_mode="generated", k=3)
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.is_refusal and response.refusal_reason == "no_citation"
    assert response.answer == REFUSAL_MESSAGE and response.citations == []


@pytest.mark.parametrize("probability, confidence", [(0.9, "high"), (0.6, "low"), (0.2, "none")])
def test_confidence_follows_the_gate_probability(make, probability, confidence):
    program = make(lm=DummyLM([generated()]), answer_mode="generated", probability=probability)
    assert program.ask("How tall is Quillon the teaching robot?").confidence == confidence


def test_citations_name_the_cited_passages_with_url_and_score(make):
    program = make(lm=DummyLM([generated(citations=[1])]), answer_mode="generated", k=3)
    response = program.ask("How tall is Quillon the teaching robot?")
    (citation,) = response.citations
    assert citation.source == "intro.md" and citation.title == "Welcome"
    assert citation.url.startswith("/docs") and 0 < citation.score <= 1


def test_an_unparseable_lm_reply_gives_way_to_the_books_sentence_shown_as_a_quote(make, caplog):
    lm = DummyLM([{"unrelated": "x"}] * 3)
    program = make(lm=lm, answer_mode="generated")
    with caplog.at_level(logging.WARNING):
        response = program.ask("How tall is Quillon the teaching robot?")
    assert response.mode == "quoted" and not response.is_refusal
    assert response.answer == "The book says: \u201cQuillon is 1.4 m tall and weighs 31 kg.\u201d"
    assert [c.source for c in response.citations] == ["intro.md"]
    assert len(lm.history) == 1  # one call: no second, JSON-formatted attempt
    assert "could not be read as an answer; quoting the book" in caplog.text


@pytest.mark.parametrize("answer", [
    "The world model is a YAML file:\n[8] # world_model.yaml\n[9] kitchen_counter: {x: 4.2}",  # the context copied
    "Joints: l_knee_pitch, neck_yaw, l_knee_pitch, neck_yaw, l_knee_pitch, neck_yaw, l_knee_pitch, neck_yaw",
])
def test_an_answer_that_is_no_answer_gives_way_to_the_quote(make, answer):
    program = make(lm=DummyLM([generated(answer=answer)]), answer_mode="generated")
    response = program.ask("How tall is Quillon the teaching robot?")
    assert response.mode == "quoted" and "1.4 m" in response.answer and "kitchen_counter" not in response.answer


def test_an_unreadable_reply_without_a_sentence_that_answers_is_refused(make):
    program = make(lm=DummyLM([{"unrelated": "x"}] * 3), answer_mode="generated")
    response = program.ask("What colour is Quillon the teaching robot?")  # the book restates the question, no more
    assert response.is_refusal and response.refusal_reason == "unreadable_reply"
    assert response.answer == REFUSAL_MESSAGE and response.citations == []


def test_the_extractive_mode_still_answers_with_the_books_sentences(make):
    response = make(answer_mode="extractive").ask("How tall is Quillon the teaching robot?")
    assert response.mode == "extractive" and not response.is_refusal and "1.4 m" in response.answer


# -- multi-turn -------------------------------------------------------------------------------------------------

def test_follow_up_is_rewritten_by_the_predictor_and_the_rewrite_is_retrieved(make, index):
    lm = DummyLM([{"standalone_query": "zephyrine reliability profile messages"},
                  generated(answer="It keeps messages when packets drop.")])
    program = make(lm=lm, answer_mode="generated")
    history = [{"question": "What are topics?", "answer": "Topics carry messages between nodes."}]
    response = program.ask("What does that profile keep?", history=history)
    assert response.standalone_query == "zephyrine reliability profile messages"
    assert index.embedder.queries[-1] == "zephyrine reliability profile messages"
    assert "What are topics?" in lm.history[0]["messages"][-1]["content"]  # the rewriter saw the history
    assert response.passages[0]["source"] == "01-ros2/01-topics.md"


REWRITE_REPLIES = {
    "missing": "Sure! The follow-up asks how tall Quillon is.\n\n[[ ## completed ## ]]",
    "empty": "[[ ## standalone_query ## ]]\n\n[[ ## completed ## ]]",
    "another field only": "[[ ## answer ## ]]\nQuillon is 1.4 m tall.\n\n[[ ## completed ## ]]",
}


@pytest.mark.parametrize("rewrite_reply", list(REWRITE_REPLIES.values()), ids=list(REWRITE_REPLIES))
def test_a_hosted_rewrite_without_a_standalone_query_falls_back_to_the_follow_up_text(make, index, hosted_lm, caplog,
                                                                                       rewrite_reply):
    """As local mode does: the follow-up read with the previous turn, its answer included (`follow_up_text`)."""
    def reply(body: dict) -> str:
        rewriting = "`standalone_query`" in body["messages"][0]["content"]
        return rewrite_reply if rewriting else chat_reply("Quillon is 1.4 m tall.")

    lm, server = hosted_lm(reply)
    history = [{"question": "What is the teaching robot called?", "answer": "It is called Quillon."}]
    with caplog.at_level(logging.DEBUG, logger="programs.rag"):
        response = make(lm=lm).ask("How tall is that robot?", history=history)
    assert len(server.requests) == 2  # the rewrite was asked, then the answer
    expected = "What is the teaching robot called? It is called Quillon. How tall is that robot?"
    assert response.standalone_query == expected and index.embedder.queries[-1] == expected
    assert not response.is_refusal and response.answer == "Quillon is 1.4 m tall."
    assert "no standalone query" in caplog.text


def test_without_history_the_question_is_the_query(make, index):
    lm = DummyLM([generated()])
    response = make(lm=lm, answer_mode="generated").ask("How tall is Quillon the teaching robot?")
    assert response.standalone_query is None
    assert index.embedder.queries == ["How tall is Quillon the teaching robot?"]
    assert len(lm.history) == 1  # no rewrite call


def test_chat_passes_history_and_remembers_answered_turns_only(make):
    chat = Chat(make(answer_mode="extractive"))
    first = chat.ask("What does the zephyrine reliability profile keep?")
    assert not first.is_refusal and len(chat) == 1
    chat.program.gate.bias = -10.0  # the next question is refused ...
    refused = chat.ask("What is the capital of France?")
    assert refused.is_refusal and len(chat) == 1  # ... and not remembered
    chat.program.gate.bias = 10.0
    follow_up = chat.ask("Which packets?")
    # read with the previous turn, its answer included: the answer names what the follow-up asks about
    assert follow_up.standalone_query == f"What does the zephyrine reliability profile keep? {first.answer} Which packets?"
    assert [turn["question"] for turn in chat.history] == ["What does the zephyrine reliability profile keep?",
                                                           "Which packets?"]
    chat.reset()
    assert chat.history == [] and chat.ask("How tall is Quillon the teaching robot?").standalone_query is None


def test_chat_history_is_bounded(make):
    chat = Chat(make(answer_mode="extractive"), max_turns=2)
    for question in list(SOURCES)[:3]:
        chat.ask(question)
    assert [turn["question"] for turn in chat.history] == list(SOURCES)[1:3]


# -- selected-text mode -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["extractive", "generated"])
def test_selected_text_answers_from_the_selection_without_retrieval(make, index, mode):
    lm = DummyLM([generated(answer="It cuts motor power in under 50 ms.", citations=[1])])
    program = make(lm=lm, answer_mode=mode)
    response = program.ask("How fast does the wireless emergency stop cut motor power?", selected_text=SELECTION)
    assert not response.is_refusal and "50 ms" in response.answer
    assert response.mode == mode
    assert index.embedder.queries == []  # nothing was retrieved: the one passage read is the selection
    assert [p["chunk_id"] for p in response.passages] == ["selection"]
    if mode == "extractive":
        assert response.answer in SELECTION
    else:
        assert SELECTION in lm.history[0]["messages"][-1]["content"]  # the selection is the whole context


@pytest.mark.parametrize("mode", ["extractive", "generated"])
def test_selected_text_refuses_when_the_answer_is_not_there(make, index, mode):
    lm = DummyLM([generated(answer="", citations=[], answerable=False)])
    program = make(lm=lm, answer_mode=mode)
    response = program.ask("How tall is Quillon the teaching robot?", selected_text=SELECTION)
    assert response.is_refusal
    assert response.answer == ("I can only answer based on the selected text, and the answer is not present "
                               "there.") == SELECTION_REFUSAL_MESSAGE
    assert index.embedder.queries == []


def test_a_selected_text_answer_stating_a_number_the_selection_does_not_hold_is_refused(make):
    lm = DummyLM([generated(answer="It cuts motor power in under 80 ms.", citations=[1])])
    response = make(lm=lm).ask("How fast does the wireless emergency stop cut motor power?", selected_text=SELECTION)
    assert response.is_refusal and response.refusal_reason == "unsupported_claim"
    assert response.answer == SELECTION_REFUSAL_MESSAGE


@pytest.mark.parametrize("reply", [{"unrelated": "x"}, generated(answer="[1] Selected text\nThe gantry test.")])
def test_a_selected_text_reply_that_is_no_answer_is_the_unreadable_reply_refusal(make, reply):
    response = make(lm=DummyLM([reply] * 3)).ask("How fast does the wireless emergency stop cut motor power?",
                                                 selected_text=SELECTION)
    assert response.is_refusal and response.refusal_reason == "unreadable_reply"
    assert response.answer == SELECTION_REFUSAL_MESSAGE


# -- extractive mode --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question", list(SOURCES))
def test_extractive_answers_quote_retrieved_passages_and_cite_them(make, question):
    program = make(answer_mode="extractive", k=3)
    response = program.ask(question)
    source, fact = SOURCES[question]
    assert not response.is_refusal and response.mode == "extractive"
    assert fact in response.answer
    retrieved = {p["chunk_id"] for p in response.passages}
    assert response.citations and {c.chunk_id for c in response.citations} <= retrieved
    assert source in {c.source for c in response.citations}
    texts = passage_texts(program, question, k=3)
    for sentence in re.split(r"(?<=[.!?])\s+", response.answer):
        assert any(sentence in text for text in texts), sentence


def test_without_an_lm_the_program_extracts(make):
    program = make(lm=None)
    assert not program.generates
    assert program.ask("How tall is Quillon the teaching robot?").mode == "extractive"


# -- input checks and the response ------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query_is_rejected(make, query):
    with pytest.raises(ValueError, match="Query cannot be empty"):
        make(answer_mode="extractive").ask(query)


@pytest.mark.parametrize("top_k", [0, 51, 10_000])
def test_a_top_k_outside_1_to_50_is_rejected_before_any_search(make, top_k):
    """Every passage goes to the LM: 10,000 would send the whole book, every question."""
    with pytest.raises(ValueError, match=f"top_k must be between 1 and 50, got {top_k}"):
        make(answer_mode="extractive").ask("How tall is Quillon the teaching robot?", top_k=top_k)


def test_long_query_is_truncated_with_a_warning(make, caplog):
    query = "How tall is Quillon the teaching robot? " + " ".join(["robot"] * 600)
    with caplog.at_level(logging.WARNING, logger="programs.rag.bounded_question"):
        response = make(answer_mode="extractive").ask(query)
    assert len(response.query.split()) == MAX_QUERY_WORDS
    assert any("keeping the first 500" in r.getMessage() for r in caplog.records)


def test_short_query_is_not_truncated_or_warned(make, caplog):
    with caplog.at_level(logging.WARNING, logger="programs.rag.bounded_question"):
        response = make(answer_mode="extractive").ask("How tall is Quillon the teaching robot?")
    assert response.query == "How tall is Quillon the teaching robot?" and not caplog.records


@pytest.mark.parametrize("probability", [0.99, 0.1])
def test_response_to_dict_is_json_serializable(make, probability):
    response = make(lm=DummyLM([generated()]), answer_mode="generated", probability=probability).ask(
        "How tall is Quillon the teaching robot?")
    data = json.loads(json.dumps(response.to_dict()))
    assert data["answer"] == response.answer and data["is_refusal"] is response.is_refusal
    assert len(data["citations"]) == len(response.citations) and data["gate"] == response.gate
    assert set(data["usage"]) == {"prompt_tokens", "completion_tokens", "cached_tokens"}


# -- concurrency and async --------------------------------------------------------------------------------------

def test_eight_threads_share_one_extractive_program(make):
    program = make(answer_mode="extractive")
    questions = list(SOURCES) * 2  # 10 questions over 8 workers
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(program.ask, questions))
    for question, response in zip(questions, responses):
        source, fact = SOURCES[question]
        assert response.query == question and fact in response.answer
        assert source in {c.source for c in response.citations}


def test_eight_threads_share_one_generating_program(make):
    """DummyLM keyed by question: each thread must get the answer to its own question."""
    answers = {q: generated(answer=f"Answer about {fact}.", citations=[1]) for q, (_, fact) in SOURCES.items()}
    program = make(lm=DummyLM(answers), answer_mode="generated")
    questions = list(SOURCES) + list(SOURCES)[:3]
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(program.ask, questions))
    for question, response in zip(questions, responses):
        assert response.answer == f"Answer about {SOURCES[question][1]}."
    assert dspy.settings.lm is None  # no thread leaked its LM into the global settings


def test_programs_with_different_lms_do_not_mix_across_threads(make):
    """dspy.context is per thread: two programs with two LMs, called at once, each use their own."""
    question = "How tall is Quillon the teaching robot?"
    first = make(lm=DummyLM({question: generated(answer="LM one: 1.4 m.")}), answer_mode="generated")
    second = make(lm=DummyLM({question: generated(answer="LM two: 1.4 m.")}), answer_mode="generated")
    jobs = [first, second] * 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda program: program.ask(question).answer, jobs))
    assert answers == ["LM one: 1.4 m.", "LM two: 1.4 m."] * 8


def test_ask_async_matches_ask(make):
    program = make(answer_mode="extractive")

    async def both():
        return await asyncio.gather(*(program.ask_async(q) for q in SOURCES))

    responses = asyncio.run(both())
    assert [r.answer for r in responses] == [program.ask(q).answer for q in SOURCES]
    assert all(not r.is_refusal for r in responses)


# -- the gate's state -------------------------------------------------------------------------------------------

def toy_features(top_dense: float, coverage: float) -> dict[str, float]:
    features = dict.fromkeys(FEATURES, 0.0)
    features.update(top_dense=top_dense, mean_top3_dense=top_dense - 0.05, coverage_top1=coverage,
                    coverage_top3=coverage, uncovered_terms=3 * (1 - coverage))
    return features


def test_gate_fit_on_separable_features_separates_them():
    positives = [toy_features(0.6 + 0.03 * i, 0.8 + 0.02 * i) for i in range(8)]
    negatives = [toy_features(0.1 + 0.03 * i, 0.1 + 0.02 * i) for i in range(8)]
    gate = RefusalGate().fit(positives + negatives, [True] * 8 + [False] * 8)
    assert gate.calibrated
    assert all(gate.probability(f) >= gate.threshold for f in positives)
    assert all(gate.probability(f) < gate.threshold for f in negatives)
    assert gate.weights["top_dense"] > 0  # more similar evidence -> more answerable


def test_gate_state_survives_save_and_load(make, index, tmp_path):
    program = make(lm=DummyLM([]), answer_mode="generated")
    positives = [toy_features(0.6 + 0.03 * i, 0.9) for i in range(5)]
    negatives = [toy_features(0.1 + 0.03 * i, 0.1) for i in range(5)]
    program.gate.fit(positives + negatives, [True] * 5 + [False] * 5)
    path = tmp_path / "program.json"
    program.save(str(path))
    assert json.loads(path.read_text())["gate"]["calibrated"] is True  # plain JSON, no pickle

    loaded = BookRAG(index.retriever, lm=DummyLM([]))
    assert not loaded.gate.calibrated
    loaded.load(str(path))
    assert loaded.gate.dump_state() == program.gate.dump_state()
    sample = toy_features(0.45, 0.5)
    assert loaded.gate.probability(sample) == pytest.approx(program.gate.probability(sample))


def test_malformed_gate_state_is_rejected():
    with pytest.raises(ValueError, match="malformed"):
        RefusalGate().load_state({"weights": {"not_a_feature": 1.0}})


def test_warm_up_reads_the_answer_prompts_fixed_prefix_in_one_one_token_call(make):
    lm = DummyLM([{"unused": "x"}, generated()])
    program = make(lm=lm, answer_mode="generated")
    program.warm_up()
    assert len(lm.history) == 1 and lm.history[0]["request"].config.max_tokens == 1
    program.ask("How tall is Quillon the teaching robot?")
    warm, answer = lm.history
    # The same system message (and demos): the prefix the prompt cache keeps.
    assert warm["request"].system == answer["messages"][0]["content"]


def test_warm_up_without_generation_calls_nothing(make):
    lm = DummyLM([])
    make(lm=lm, answer_mode="extractive").warm_up()
    assert lm.history == []


def test_a_deep_copied_program_shares_its_index_and_warns_nothing(index, caplog):
    program = BookRAG.from_settings(index.settings, index, lm=DummyLM([]))
    with caplog.at_level("WARNING"):
        copy = program.deepcopy()  # what every DSPy optimizer does to the student
    assert copy.index is program.index and copy is not program
    assert not [r for r in caplog.records if "deep copy" in r.getMessage()]


# -- the answer as it is written (DSPy streaming) --------------------------------------------------------------

def test_the_answer_streams_piece_by_piece_and_the_response_is_the_checked_answer(make, hosted_lm):
    lm, server = hosted_lm(chat_reply("Quillon is 1.4 m tall."))
    pieces = []
    response = make(lm=lm).ask("How tall is Quillon the teaching robot?", on_answer_text=pieces.append)
    assert server.streamed == 1
    assert len(pieces) > 3  # the answer arrived in pieces, not whole
    assert "".join(pieces).strip() == response.answer == "Quillon is 1.4 m tall."
    assert not response.is_refusal and [c.source for c in response.citations] == ["intro.md"]
    assert "reasoning" not in "".join(pieces) and "[[" not in "".join(pieces)  # the answer field only


def test_a_streamed_draft_the_checks_refuse_is_replaced_by_the_refusal(make, hosted_lm):
    lm, _ = hosted_lm(chat_reply("Quillon is 2.7 m tall."))  # no passage says 2.7 m
    pieces = []
    response = make(lm=lm).ask("How tall is Quillon the teaching robot?", on_answer_text=pieces.append)
    assert "".join(pieces).strip() == "Quillon is 2.7 m tall."  # what was shown while it was written
    assert response.is_refusal and response.refusal_reason == "unsupported_claim"
    assert response.answer == REFUSAL_MESSAGE


def test_without_a_listener_nothing_streams(make, hosted_lm):
    lm, server = hosted_lm(chat_reply("Quillon is 1.4 m tall."))
    assert make(lm=lm).ask("How tall is Quillon the teaching robot?").answer == "Quillon is 1.4 m tall."
    assert server.streamed == 0 and server.requests[-1].get("stream") is not True


def test_a_failing_model_while_streaming_is_the_same_agent_error_as_without(make, hosted_lm):
    lm, server = hosted_lm(chat_reply("Quillon is 1.4 m tall."))
    server.script = [(500, 0.0)]  # no retries: the first reply is the failure
    with pytest.raises(AgentError, match="failed"):
        make(lm=lm).ask("How tall is Quillon the teaching robot?", on_answer_text=lambda piece: None)
