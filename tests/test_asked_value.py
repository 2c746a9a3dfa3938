"""The value a question asks for (price, number, date, version) and the gate features built on it: a near-miss
question shares the book's words but asks for a value no retrieved sentence holds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programs.refusal.asked_value import asked_value
from programs.refusal.refusal_gate import gate_features
from retrievers.passage import Passage

KESTREL = [
    "Kestrel is a 1.2 m tall teaching humanoid with 28 degrees of freedom and a mass of 24 kg.",
    "Kestrel's battery sits in the torso. The battery is swapped between lab sessions.",
    "The course project is built with the Unity 2022.3 LTS editor.",
]


def passages(texts: list[str]) -> list[Passage]:
    return [Passage(id=f"p{n}", score=1.0 - 0.1 * n, text=text, title="Kestrel", heading="", module="",
                    source=f"{n}.md", url="", dense_score=0.6 - 0.05 * n) for n, text in enumerate(texts)]


@pytest.mark.parametrize("question, kind", [
    ("How much does Kestrel weigh?", "number"),
    ("How many nodes start with the full stack?", "number"),
    ("What is the maximum torque of the wrist joint?", "number"),
    ("What baud rate does the IMU use?", "number"),
    ("What is the retail price of a Kestrel humanoid?", "money"),
    ("How much does a Unity Pro seat cost?", "money"),
    ("When was Whisper released?", "date"),
    ("In what year was Gazebo Harmonic released?", "date"),
    ("Which Unity editor version is the project built with?", "version"),
    ("How do I launch the simulation?", None),
    ("Why does the knee limit sit at zero?", None),
    ("When does the lab use YAML launch files?", None),  # "when" about a situation, not a date
])
def test_asked_value_names_the_kind_of_value_a_question_wants(question, kind):
    asked = asked_value(question)
    assert (asked.kind if asked else None) == kind


def test_a_value_of_the_asked_kind_is_recognised_in_text():
    assert asked_value("What is the retail price?").held_by("It sells for $25,000.")
    assert not asked_value("What is the retail price?").held_by("It has 28 degrees of freedom.")
    assert asked_value("Which Ubuntu release is used?").held_by("Ubuntu 24.04 with ROS 2 Jazzy")
    assert not asked_value("In what year was it released?").held_by("It has 28 joints.")


@pytest.mark.parametrize("question, answer, answered", [
    ("What gear ratio do Kestrel's knee actuators use?", "They use 0.012 kg·m².", False),  # inertia, no ratio
    ("What gear ratio do Kestrel's knee actuators use?", "A 50:1 reduction.", True),
    ("What gear ratio do Kestrel's knee actuators use?", "The ratio is 9.", True),  # no unit: it may be one
    ("How tall is Kestrel?", "Kestrel has a mass of 24 kg.", False),
    ("How tall is Kestrel?", "Kestrel is 1.2 m tall and has a mass of 24 kg.", True),
    ("What is the maximum torque of the knee?", "The knee turns at up to 12 rad/s.", False),
    ("What is the maximum torque of the knee?", "The knee allows 90 N·m of effort.", True),
    ("What end-to-end latency was measured?", "The robot is 1.2 m tall.", False),
    ("How long does the switch to STAND take?", "Stiffness ramps up over 3 s.", True),  # how long: time or length
    ("How far ahead does the preview control look?", "The next 1.6 s of the reference.", True),
    ("What baud rate does the IMU use?", "It reads at 200 Hz.", True),  # "rate" is of no one kind
    ("What force-torque sensors does Kestrel use?", "Two, sampled at 1 kHz.", True),  # a compound: no force asked
    ("How tall is Kestrel?", "Twelve metres.", True),  # a value in words has no unit to tell
])
def test_a_value_with_a_unit_of_another_quantity_does_not_answer_it(question, answer, answered):
    asked = asked_value(question)
    assert asked.held_by(answer)  # each states a number: the kind asked, as far as the kind goes
    assert asked.answered_by(answer) is answered


@pytest.mark.parametrize("question, answer", [
    ("At what temperature does the hip motor shut down?", "The hip motor shuts down at 85 degrees Celsius."),
    ("What top walking speed does Kestrel reach?", "Kestrel walks at up to 1.5 metres per second."),
    ("What top walking speed does Kestrel reach?", "Kestrel walks at up to 5.4 km per hour."),
    ("What is the maximum speed of the knee?", "The knee turns at up to 3 radians per second."),
    ("What is the maximum torque of the knee?", "The knee gives up to 88 lb-ft."),
    ("What is the maximum torque of the knee?", "The knee gives up to 40 N.m."),
    ("What is the maximum speed of the knee?", "The knee turns at up to 60 revolutions per minute."),
    ("What is the maximum torque of the knee?", "The knee gives up to 12 kN·m."),
    ("What bandwidth does the camera link need?", "It streams 400 Mbit/s."),
])
def test_a_value_in_a_multi_word_or_compound_unit_answers_its_quantity(question, answer):
    assert asked_value(question).answered_by(answer)


@pytest.mark.parametrize("question, answer, answered", [
    ("How tall is Kestrel?", "It walks at 1.5 metres per second.", False),  # a speed, not a length
    ("What is the maximum torque of the knee?", "It accelerates at 2 metres per second squared.", False),
    ("How heavy is the arm?", "The wrist gives 88 lb-ft.", False),  # a torque, not a mass
    ("What angle does the hip reach?", "The hip stops at 85 degrees Celsius.", False),
    ("What is the maximum torque of the knee?", "The knee stiffness is 300 N·m/rad.", True),  # no kind it tells
    ("What is the maximum speed of the arm?", "The arm moves 3 kg·m/s.", True),
    ("What angle does the hip reach?", "It turns 3 rad per step.", True),
])
def test_a_compound_unit_is_refused_only_when_its_kind_is_told(question, answer, answered):
    assert asked_value(question).answered_by(answer) is answered


def test_a_paraphrased_quantity_is_covered_by_a_value_next_to_the_topic():
    """"weigh" is answered by "a mass of 24 kg": the number stands for the quantity word."""
    features = gate_features("How much does Kestrel weigh?", passages(KESTREL))
    assert features["value_coverage"] == 1.0 and features["uncovered_share"] == 0.0
    assert features["asks_value"] == 1.0


def test_a_value_the_book_never_states_leaves_the_sentence_coverage_low():
    """The battery is mentioned, but never with a number: no sentence holds both."""
    asked = gate_features("What capacity does Kestrel's battery have?", passages(KESTREL))
    covered = gate_features("How many degrees of freedom does Kestrel have?", passages(KESTREL))
    assert asked["coverage_top3"] >= 0.5  # the topic words are all there ...
    assert asked["value_coverage"] < covered["value_coverage"]  # ... but not next to a number
    assert covered["value_coverage"] == 1.0


def test_a_price_question_on_a_book_without_prices_has_no_value_coverage():
    assert gate_features("What is the retail price of Kestrel?", passages(KESTREL))["value_coverage"] == 0.0


def test_a_question_asking_no_value_is_scored_on_its_best_sentence():
    features = gate_features("Where does Kestrel's battery charge?", passages(KESTREL))
    assert features["asks_value"] == 0.0 and features["value_coverage"] == pytest.approx(2 / 3)  # no "charge"
