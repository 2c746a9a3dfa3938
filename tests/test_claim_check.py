"""The claim-in-passage check: an answer's numbers, units, versions and names must occur in the passages it cites."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from programs.refusal.claim_check import check_claims, grounded_citations

PASSAGES = [
    "Kestrel is a 1.2 m tall teaching humanoid with 28 degrees of freedom and a mass of 24 kg.",
    "The software images select rmw_cyclonedds_cpp. The benches use ROS_DOMAIN_ID 42 on Ubuntu 24.04.",
    "Synthetic data: the scenes rendered 10,000 labeled images at 1280 × 720; a LiDAR unit costs $1,000-$75,000.",
]


@pytest.mark.parametrize("answer", [
    "Kestrel is 1.2 m tall and has a mass of 24 kg [1].",
    "It stands 1.2m tall and weighs 24kg.",
    "Kestrel is 1.2 metres tall; it weighs 24 kilograms.",
    "The images select rmw_cyclonedds_cpp and the benches use domain ID 42 [2].",
    "They rendered 10000 labeled images at 1280 × 720.",
    "The scenes rendered 10,000 images.",
    "The benches run Ubuntu 24.04.",
    "A LiDAR unit costs between $1,000 and $75,000.",
    "It has 28 degrees of freedom.",
])
def test_an_answer_whose_claims_are_in_the_cited_passages_passes(answer):
    check = check_claims(answer, PASSAGES)
    assert check.supported, check.unsupported
    assert check.claims


@pytest.mark.parametrize("answer, unsupported", [
    ("Kestrel has a mass of 31 kg.", "31 kg"),
    ("Kestrel is 1.2 s tall.", "1.2 s"),  # the number is there, with another unit
    ("Kestrel weighs 24 lb.", "24 lb"),
    ("The battery pack stores 48 V.", "48 v"),
    ("The benches run Ubuntu 22.04.", "22.04"),
    ("The images select rmw_fastrtps_cpp.", "rmw-fastrtps-cpp"),
    ("Kestrel's battery is a LiFePO4 pack.", "lifepo4"),
    ("The retail price of Kestrel is $25,000.", "25000"),
    ("Kestrel runs MuJoCo for its simulation.", "mujoco"),
])
def test_a_number_or_name_no_cited_passage_holds_fails(answer, unsupported):
    check = check_claims(answer, PASSAGES)
    assert not check.supported
    assert unsupported in check.unsupported


@pytest.mark.parametrize("answer, passage, unsupported", [
    ("The scenes generated 2 labeled images.", "Labelers write 2D bounding boxes beside each image.", "2"),
    ("The camera records at 4 fps.", "The camera records 4K video.", "4 fps"),
    ("The pelvis link has a mass of 1.0 kg.", "Module 1 converts Kestrel's URDF.", "1 kg"),
    ("The whole loop takes 2 s.", "Install ROS 2 on the robot.", "2 s"),
])
def test_a_number_that_is_part_of_a_name_holds_no_quantity(answer, passage, unsupported):
    # "2D", "4K" and "Module 1" number a thing; they do not measure one
    assert unsupported in check_claims(answer, [passage]).unsupported


@pytest.mark.parametrize("answer, passage", [
    ("Install ROS 2.", "Install ROS 2 on the robot."),
    ("Build the world in Module 1.", "Module 1 converts Kestrel's URDF."),
    ("It draws 2D bounding boxes.", "Labelers write 2D bounding boxes."),
    ("It is 5 times faster.", "Up to 5x faster than the CPU path."),
    ("The step length is 0.4 m.", "max_step_length: 0.4"),  # a bare figure in code takes the answer's unit
])
def test_a_number_stated_as_the_passage_states_it_passes(answer, passage):
    check = check_claims(answer, [passage])
    assert check.supported, check.unsupported


def test_only_the_cited_passages_count():
    answer = "The images select rmw_cyclonedds_cpp."
    assert check_claims(answer, PASSAGES[1:2]).supported
    assert not check_claims(answer, PASSAGES[:1]).supported


def test_citation_markers_and_list_numbers_are_not_claims():
    answer = "Kestrel's facts:\n1. It is 1.2 m tall [1].\n2. It has a mass of 24 kg [1, 3]."
    assert check_claims(answer, PASSAGES[:1]).supported


def test_an_answer_without_numbers_or_names_has_nothing_to_contradict():
    check = check_claims("It keeps the robot balanced while it walks.", PASSAGES)
    assert check.supported and check.claims == ()


def test_a_value_stated_from_an_uncited_retrieved_passage_gets_that_passage_cited():
    texts = ["The QoS preset uses BEST_EFFORT reliability.", "Kestrel is 1.2 m tall.", "Its queue depth is 5."]
    assert grounded_citations("It uses BEST_EFFORT with a depth of 5.", texts, [1]) == [1, 3]


def test_a_value_no_retrieved_passage_holds_gives_no_citations():
    texts = ["The QoS preset uses BEST_EFFORT reliability.", "Kestrel is 1.2 m tall."]
    assert grounded_citations("Its gearboxes have a 12:1 ratio.", texts, [1]) is None


def test_citations_that_hold_every_claim_are_kept_as_they_are():
    texts = ["Kestrel is 1.2 m tall.", "It has a mass of 24 kg."]
    assert grounded_citations("Kestrel is 1.2 m tall and weighs 24 kg.", texts, [2, 1]) == [2, 1]
