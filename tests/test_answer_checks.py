"""`check_answer`: the checks after the LM, as one function of the answer, its citations, the passages, the
question and the turns before it. Each refusal reason has a case that trips it and a near case that passes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from dspy.utils import DummyLM

from programs.rag.book_rag import BookRAG
from programs.refusal.answer_checks import check_answer
from programs.refusal.reasons import RefusalReason
from retrievers.passage import Passage


def passage(text: str, n: int = 1) -> Passage:
    return Passage(id=f"p{n}", score=0.5, text=text, title="Intro", heading="Intro", module="", source=f"{n}.md",
                   url="")


PASSAGES = [
    passage("Kestrel is 1.2 m tall. Each leg has a knee that bends up to 2.35 rad.", 1),
    passage("Kestrel has a mass of 24 kg. Start the simulator with `gz sim -r kestrel_lab.sdf` from the repo.\n"
            "Build the docs with `cargo doc --open`.\nBuild the code with `cargo build --release`.", 2),
    passage("| Stage | Budget |\n|---|---|\n| Speech recognition | 350 ms |\n| Planning | 900 ms |\n\n"
            "The whole pipeline must answer within 2 s.", 3),
]


def check(question, answer, citations=(1,), **kwargs):
    return check_answer(question, answer, list(citations), PASSAGES, **kwargs)


def test_an_answer_held_by_its_cited_passage_passes_with_its_citations():
    checked = check("How tall is Kestrel?", "Kestrel is 1.2 m tall.")
    assert checked.passed and checked.citations == [1]


def test_the_models_own_no_is_a_model_refusal():
    assert check("How tall?", "…", answerable=False).refusal is RefusalReason.MODEL


def test_an_answer_citing_nothing_and_stating_nothing_a_passage_holds_is_refused():
    assert check("Why is Kestrel tall?", "Being tall helps it reach shelves.", citations=()).refusal \
        is RefusalReason.NO_CITATION


def test_an_answer_citing_nothing_gets_the_passage_that_holds_its_value_cited():
    checked = check("How tall is Kestrel?", "Kestrel is 1.2 m tall.", citations=())
    assert checked.passed and checked.citations == [1]


def test_an_answer_citing_nothing_with_a_value_no_passage_holds_is_an_unsupported_claim():
    assert check("How tall is Kestrel?", "Kestrel is 1.5 m tall.", citations=()).refusal \
        is RefusalReason.UNSUPPORTED_CLAIM


def test_a_value_no_retrieved_passage_holds_is_an_unsupported_claim():
    assert check("How tall is Kestrel?", "Kestrel is 1.5 m tall.").refusal is RefusalReason.UNSUPPORTED_CLAIM


def test_a_name_the_question_uses_is_no_claim_of_the_answer():
    assert check("How do I start the simulator from the Kestrel repo (the KLab setup)?",
                 "Run `gz sim -r kestrel_lab.sdf` from the repo of the KLab setup.", citations=(2,)).passed
    assert check("How do I start the simulator?", "Run `gz sim -r kestrel_lab.sdf` from the KLab setup.",
                 citations=(2,)).refusal is RefusalReason.UNSUPPORTED_CLAIM


def test_a_claim_held_by_an_uncited_passage_gets_that_passage_cited():
    checked = check("What is Kestrel's mass?", "Its mass is 24 kg.")
    assert checked.passed and checked.citations == [1, 2]


@pytest.mark.parametrize("answer", [
    "Run `pip install kestrel-sim` first.",  # a package no page names
    "Build and open the docs with `cargo build --open`.",  # two real commands combined into one no page shows
    "Pass the --headless flag to gz sim.",
])
def test_a_command_no_retrieved_passage_shows_is_unsupported_code(answer):
    assert check("How do I start the simulator?", answer, citations=(2,)).refusal is RefusalReason.UNSUPPORTED_CODE


@pytest.mark.parametrize("answer", [
    "Run `gz sim -r kestrel_lab.sdf` from the repo.",
    "Use `cargo doc --open`, which builds and opens the docs.",
    "Start the simulator with gz sim and the kestrel_lab.sdf world.",
])
def test_a_command_a_passage_shows_passes(answer):
    assert check("How do I start the simulator and build the docs?", answer, citations=(2,)).passed


def test_a_number_from_a_sentence_about_something_else_is_refused():
    # 350 ms is in a retrieved passage, but in the speech-recognition row, not about the whole pipeline
    checked = check("How long may the whole pipeline take?", "The whole pipeline may take 350 ms.", citations=(3,))
    assert checked.refusal is RefusalReason.VALUE_OFF_SUBJECT
    assert check("How long may the whole pipeline take?", "It must answer within 2 s.", citations=(3,)).passed


def test_a_number_in_a_table_row_about_the_subject_passes_with_the_rows_header():
    assert check("What is the budget of planning?", "Planning has a budget of 900 ms.", citations=(3,)).passed


JOINT_LIMITS = passage("| Joint | Lower (rad) | Upper (rad) |\n|---|---|---|\n| l_hip_pitch | -1.80 | 0.90 |\n"
                       "| l_shoulder_pitch | -3.00 | 1.00 |\n| l_knee | 0.00 | 2.35 |", 1)


def test_a_number_from_the_row_of_another_thing_is_refused():
    # "pitch" is in both rows' labels, but only l_hip_pitch names the hip pitch
    question = "What is the upper limit of the hip pitch joint?"
    refused = check_answer(question, "The hip pitch joint's upper limit is 1.00 rad.", [1], [JOINT_LIMITS])
    assert refused.refusal is RefusalReason.VALUE_OFF_SUBJECT
    assert check_answer(question, "The hip pitch joint's upper limit is 0.90 rad.", [1], [JOINT_LIMITS]).passed


def test_a_question_about_two_rows_may_take_a_number_from_each():
    question = "What are the upper limits of the hip pitch and knee joints?"
    answer = "The hip pitch joint reaches 0.90 rad and the knee 2.35 rad."
    assert check_answer(question, answer, [1], [JOINT_LIMITS]).passed


@pytest.mark.parametrize("code, question, answer", [
    ("```csharp\npublic int rosPort = 10000;\n```", "Which port does the Unity script reach ROS on?", "Port 10000."),
    ("```yaml\nsafety:\n  max_linear_speed: 0.3\n```", "What is the linear speed limit?", "It is 0.3 m/s."),
    ("Set the stop distance in the robot config:\n\n```yaml\nstop: 0.2\n```", "What stop distance is set?",
     "The stop distance is 0.2 m."),  # the value's line follows the sentence that names it
    ("```python\nIMAGE_SIZE = (640, 480)\n```", "What image size does the camera use?",
     "The camera uses 640 by 480 images."),  # a tuple, written out in words
])
def test_a_number_in_code_about_the_subject_passes(code, question, answer):
    passages = [passage(code, 1)]
    assert check_answer(question, answer, [1], passages).passed


def test_a_number_the_question_states_may_be_repeated():
    assert check("What bends up to 2.35 rad?", "The knee bends up to 2.35 rad.").passed


def test_an_answer_from_memory_is_unsupported_content():
    recipe = "Whisk flour, sugar, eggs and buttermilk, then fry spoonfuls in melted butter until golden."
    assert check("How do I make pancakes?", recipe).refusal is RefusalReason.UNSUPPORTED_CONTENT


def test_an_asked_number_that_the_answer_does_not_state_is_refused():
    assert check("How tall is Kestrel?", "Kestrel is a teaching robot.").refusal is RefusalReason.NO_ASKED_VALUE


KNEE = [passage("Kestrel's knee actuator has an identified armature of 0.012 kg·m² and a 50:1 gear ratio.", 1)]


@pytest.mark.parametrize("answer, refusal", [
    ("Kestrel's knee actuators use 0.012 kg·m².", RefusalReason.NO_ASKED_VALUE),  # a number, but of inertia
    ("Kestrel's knee actuators use a 50:1 gear ratio.", None),
])
def test_an_asked_quantity_answered_with_a_unit_of_another_kind_is_refused(answer, refusal):
    """"What gear ratio do Kestrel's knee actuators use?" was answered "0.012 kg·m²": the value check took any
    number for the ratio."""
    checked = check_answer("What gear ratio do Kestrel's knee actuators use?", answer, [1], KNEE)
    assert checked.refusal is refusal


def test_a_quoted_answer_is_only_checked_for_citations():
    assert check("How tall is Kestrel?", "Kestrel is 9 m tall.", generated=False).passed


# -- follow-ups: the subject is in the conversation -------------------------------------------------------------

# The bundled book's QoS section, as retrieved for the follow-up below (datasets/humanoid-primer, ROS 2 chapter)
QOS = [
    passage("Not every stream deserves the same treatment. ROS 2 expresses these needs with **QoS policies**, "
            "attached to every publisher and subscriber.\n\n| Policy | Options | What it controls |\n|---|---|---|\n"
            "| Depth | an integer; the default is 10 | N, the queue size used with `KEEP_LAST` |\n"
            "| Reliability | `RELIABLE`, `BEST_EFFORT` | whether lost samples are retransmitted |", 1),
    passage("Most code starts from a preset. The default profile is `RELIABLE`, `VOLATILE`, and `KEEP_LAST` with a "
            "depth of 10, which suits ordinary command and status topics. The sensor-data preset, exposed in rclpy as "
            "`qos_profile_sensor_data`, switches to `BEST_EFFORT` with a depth of 5, trading completeness for low "
            "latency. Kestrel's camera and IMU drivers both publish with the sensor-data preset.", 2),
    passage("`/joint_states` is consumed by the whole-body controller with a deadline of 4 ms, which is two missed "
            "cycles at the 500 Hz publishing rate. When the deadline is missed, the controller receives a "
            "\"requested deadline missed\" event and commands the joints into a damped safe-stop.", 3),
]
# A chat on the bundled book: the local model's first answer, then its draft for the follow-up, which restates the depth
DEPTH_TURN = {"question": "What QoS depth does the IMU topic use?", "answer": "The QoS depth for the IMU topic is 5."}
RELIABILITY = "And what reliability does it use?"
RELIABILITY_ANSWER = "The sensor-data QoS preset uses a depth of 5 and BEST_EFFORT reliability."


def test_a_follow_ups_answer_may_restate_the_number_of_the_turn_before_it():
    checked = check_answer(RELIABILITY, RELIABILITY_ANSWER, [2], QOS, history=[DEPTH_TURN])
    assert checked.passed and checked.citations == [2, 1]  # passage 1 names "QoS"
    # the same answer to a question that stands alone states a depth no sentence about reliability holds
    assert check_answer(RELIABILITY, RELIABILITY_ANSWER, [2], QOS).refusal is RefusalReason.VALUE_OFF_SUBJECT


@pytest.mark.parametrize("answer", [
    "It uses BEST_EFFORT, with a deadline of 4 ms.",  # the joint states' figures: about neither turn's subject
    "It uses BEST_EFFORT at 500 Hz.",
    "It uses RELIABLE reliability, with a depth of 10.",  # a depth, as the earlier question asks, but not the one
])
def test_a_follow_ups_number_that_neither_its_subject_nor_the_turn_before_holds_is_refused(answer):
    checked = check_answer(RELIABILITY, answer, [2, 3], QOS, history=[DEPTH_TURN])
    assert checked.refusal is RefusalReason.VALUE_OFF_SUBJECT


# A must-refuse follow-up of the bundled set (r-020): the book never gives the model's GPU memory
WHISPER_TURN = {"question": "Which speech recognition model transcribes Kestrel's voice commands?",
                "answer": "Whisper small.en through the faster-whisper library, running on the Orin NX GPU with int8 "
                          "quantization and a beam size of 5."}
VOICE = [
    passage("Transcription uses the Whisper `small.en` model through the faster-whisper library, running on the Orin NX "
            "GPU with int8 quantization and a beam size of 5. The English-only model is both faster and more accurate "
            "on English than the multilingual model of the same size.", 1),
    passage("Kestrel has a circular array of four microphones on top of its head, sampled at 16 kHz. Nothing is "
            "transcribed until the wake phrase \"Hey Kestrel\" is detected with a confidence above 0.6; after that the "
            "robot listens for at most 8 seconds.", 2),
]


def test_a_must_refuse_follow_up_answered_with_a_figure_of_the_earlier_subject_is_still_refused():
    # 0.6 is the wake word's confidence: a sentence about transcribing (the earlier question's words), not about
    # the model's memory, and a figure the earlier turn never stated
    answer = "Whisper small.en takes 0.6 GB of GPU memory on the Orin NX."
    checked = check_answer("How much GPU memory does that model take on the Orin NX?", answer, [1, 2], VOICE,
                           history=[WHISPER_TURN])
    assert checked.refusal is RefusalReason.VALUE_OFF_SUBJECT


class RetrievedQoS:
    """A retriever that finds the QoS section for any query, as close in meaning as the gate asks."""

    def search(self, query, k, module=None, mode="hybrid"):
        return [replace(p, dense_score=0.6) for p in QOS[:k]]


def test_the_program_checks_a_follow_up_with_its_history():
    lm = DummyLM([{"standalone_query": "What reliability does the IMU topic use?"},
                  {"reasoning": "Passage 2.", "answer": RELIABILITY_ANSWER, "citations": [2], "answerable": True}])
    program = BookRAG(RetrievedQoS(), lm=lm, top_k=3, context_words=0)
    program.gate.threshold = 0.0  # the gate's decision is not under test
    response = program.ask(RELIABILITY, history=[DEPTH_TURN])
    assert not response.is_refusal and response.answer == RELIABILITY_ANSWER
