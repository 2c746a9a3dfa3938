"""`CompactContext` on hand-built passages: which sentences the LM reads, and what each brings with it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from book_passages import passage

from programs.rag.context import CompactContext


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
