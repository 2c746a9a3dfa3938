"""`ExtractiveAnswer` on hand-built passages: what it quotes, and what it cites."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from book_passages import passage

from programs.rag.extractive_answer import ExtractiveAnswer

LIFECYCLE = """ROS 2 nodes follow a specific lifecycle that includes:
- **Unconfigured**: Initial state after creation
- **Inactive**: Configured but not executing callbacks
- **Active**: Fully operational, executing callbacks
- **Finalized**: Ready for destruction
"""
UNRELATED = "Gazebo simulates rigid body physics, gravity and friction between links of a robot."


def test_a_list_lead_in_brings_its_items():
    extract = ExtractiveAnswer()("What states does a ROS 2 node lifecycle include?", [passage(UNRELATED, 0),
                                                                                      passage(LIFECYCLE, 1)])
    for state in ("Unconfigured", "Inactive", "Active", "Finalized"):
        assert state in extract.answer
    assert extract.citations == [2]


def test_the_answer_includes_a_numbered_fact_from_the_cited_passage():
    text = ("The walking server offers the walk_to action. The server publishes feedback at 5 Hz while the robot "
            "walks. Goals farther than 5 m are rejected.")
    extract = ExtractiveAnswer()("How often does the walk_to action server send feedback?",
                                 [passage(UNRELATED, 0), passage(text, 1)])
    assert "feedback at 5 Hz" in extract.answer and extract.citations == [2]


def test_a_review_question_in_the_book_loses_to_the_sentence_that_answers():
    text = ("Review questions: What are the main differences between feature-based and direct visual SLAM? "
            "Feature-based visual SLAM tracks keypoints, while direct visual SLAM uses raw pixel intensities.")
    extract = ExtractiveAnswer(max_sentences=1)("How do feature-based and direct visual SLAM differ?",
                                               [passage(text)])
    assert extract.answer == ("Feature-based visual SLAM tracks keypoints, while direct visual SLAM uses raw pixel "
                              "intensities.")


def test_a_sentence_repeated_by_overlapping_chunks_is_quoted_once():
    text = "The RMW layer lets ROS 2 work with different DDS implementations. Cyclone DDS is one of them."
    extract = ExtractiveAnswer()("Which DDS implementations can ROS 2 work with?", [passage(text, 0),
                                                                                  passage(text, 1)])
    assert extract.answer.count("The RMW layer") == 1


def test_a_code_line_is_quoted_when_only_code_holds_the_value():
    text = ("The planner calls the OpenAI API.\n```python\nclass Planner:\n"
            "    def __init__(self, model: str = \"gpt-3.5-turbo\"):\n        self.temperature = 0.1  # deterministic\n```")
    extract = ExtractiveAnswer()("Which model does the planner call?", [passage(text)])
    assert "gpt-3.5-turbo" in extract.answer


def test_the_answer_keeps_to_its_word_budget_and_quotes_only_the_passages():
    texts = [f"Sentence {i} about robot joints and robot links, with several more words to count here." for i in
             range(20)]
    passages = [passage(" ".join(texts[i:i + 5]), i) for i in range(0, 20, 5)]
    extract = ExtractiveAnswer(max_sentences=5, max_words=40)("What about robot joints and links?", passages)
    assert 0 < len(extract.answer.split()) <= 40
    assert all(sentence in texts for sentence in re.split(r"(?<=\.)\s+", extract.answer))
    assert extract.citations and set(extract.citations) <= {1, 2, 3, 4}
