"""`CompactContext` on hand-built passages: which sentences the LM reads, and what each brings with it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from book_passages import passage

from programs.rag.context import CompactContext
from programs.text.passage_sentences import passage_sentences


def test_a_sentence_that_points_back_brings_the_sentence_before_it():
    text = ("XML cannot contain loops or arbitrary logic. "
            "Kestrel's main bringup file is written in Python for exactly this reason. "
            "Python launch files are common.")
    context = CompactContext(max_words=20)("Why is Kestrel's main bringup file written in Python?", [passage(text)])
    assert "XML cannot contain loops" in context
    assert context.index("XML cannot") < context.index("for exactly this reason")  # book order


def test_a_sentence_starting_with_a_pronoun_brings_its_subject():
    text = ("The walking planner offers the walk_to action. "
            "It rejects any goal farther than 5 m from the robot. "
            "Logs of every robot are kept.")
    context = CompactContext(max_words=18)("How far from the robot may a goal be?", [passage(text)])
    assert "The walking planner offers the walk_to action." in context
    assert "farther than 5 m" in context


def test_a_sentence_that_stands_alone_brings_nothing_else():
    text = ("The walking planner offers the walk_to action. "
            "The server publishes feedback at 5 Hz while the robot walks.")
    context = CompactContext(max_words=12)("How often does the walk_to server publish feedback?", [passage(text)])
    assert "feedback at 5 Hz" in context
    assert "offers the walk_to action" not in context


def test_a_numbered_item_with_a_bold_label_is_one_unit_with_its_label():
    text = ("Bring the policy onto hardware in stages:\n"
            "1. **Bench.** Replay logged commands with the motors unpowered.\n"
            "2. **Gantry.** Run the policy with the feet about 5 cm above the floor, for 60 seconds.\n")
    sentences = passage_sentences([passage(text)])
    assert [s.text for s in sentences][1:] == [
        "Bench. Replay logged commands with the motors unpowered.",
        "Gantry. Run the policy with the feet about 5 cm above the floor, for 60 seconds."]


def test_a_list_item_brings_the_sentence_that_announces_the_list():
    text = ("Logs of every run are kept for a week.\n"
            "The fail-safe functions are:\n"
            "- Safe Torque Off\n"
            "- Safe Limited Speed\n")
    context = CompactContext(max_words=8)("Which function limits speed?", [passage(text)])
    assert "The fail-safe functions are:" in context and "Safe Limited Speed" in context
    assert "Logs of every run" not in context


def test_list_items_keep_their_markers_so_the_model_reads_a_list():
    text = ("Vision-based control incorporates:\n"
            "* Object detection and tracking\n"
            "* Visual servoing for precise positioning. It closes the loop on image features.\n"
            "Bring it up in order:\n"
            "3. Start the camera driver\n")
    context = CompactContext(max_words=60)("Which technique gives precise positioning?", [passage(text)])
    assert context.splitlines()[1:] == [
        "Vision-based control incorporates:",
        "- Object detection and tracking",
        "- Visual servoing for precise positioning.",
        "It closes the loop on image features.",
        "Bring it up in order:",
        "3. Start the camera driver",
    ]


def test_a_code_comment_and_the_code_line_it_describes_need_each_other():
    text = ("The lab world lives in the worlds folder.\n```bash\n"
            "# start the world running immediately instead of paused\ngz sim -r kestrel_lab.sdf\n"
            "ros2 run ros_gz_sim create -name kestrel\n```\n")
    comment, command, other = passage_sentences([passage(text)])[1:]
    assert command.text == "gz sim -r kestrel_lab.sdf"
    assert (1, command.index) in comment.needs and (1, comment.index) in command.needs
    assert other.needs == ()


def test_the_context_keeps_to_the_best_passage_when_a_lower_one_only_looks_alike():
    best = "The IMU driver keeps 5 messages in its queue."
    lower = "Topic depth and queue use are discussed for the IMU in a later chapter."
    context = CompactContext(max_words=10)("What queue depth does the IMU topic use?",
                                          [passage(best, 0), passage("Gait phases.", 1), passage("Walking.", 2),
                                           passage(lower, 3)])
    assert "5 messages in its queue" in context and "[4]" not in context


@pytest.mark.parametrize("code", [
    "The lab world lives in the worlds folder.\n\n    # start the world running immediately\n    gz sim -r lab.sdf\n",
    "The lab world lives in the worlds folder.\n\n\t# start the world running immediately\n\tgz sim -r lab.sdf\n",
    ("The lab world lives in the worlds folder.\n\n> ```bash\n> # start the world running immediately\n"
     "> gz sim -r lab.sdf\n> ```\n"),
])
def test_indented_code_and_code_fenced_in_a_blockquote_are_code_lines(code):
    prose, comment, command = passage_sentences([passage(code)])
    assert not prose.code and comment.code and command.code
    assert (comment.text, command.text) == ("# start the world running immediately", "gz sim -r lab.sdf")
    assert (1, command.index) in comment.needs


def test_a_list_items_indented_paragraph_is_prose_not_code():
    text = "- Start the driver first.\n\n    The driver must run before the planner starts.\n"
    assert [s.code for s in passage_sentences([passage(text)])] == [False, False]


def test_a_table_without_outer_bars_is_rows_under_their_header():
    text = "The joint limits are listed below.\n\nJoint | Limit\n:--- | ---:\nhip | 2.1 rad\nknee | 2.6 rad\n"
    intro, header, hip, knee = passage_sentences([passage(text)])
    assert (header.text, hip.text, knee.text) == ("Joint | Limit", "hip | 2.1 rad", "knee | 2.6 rad")
    assert hip.row and knee.row and hip.needs == knee.needs == ((1, header.index),)
    assert not intro.row and not header.row
