"""What a reply that is no answer gives way to: one sentence of the book that answers on its own, or nothing."""

from __future__ import annotations

import pytest

from programs.rag.book_quote import book_quote, quoted
from retrievers.markdown import parse_page
from retrievers.passage import Passage


def passage(text: str) -> Passage:
    return Passage(id="p", score=1.0, text=text, title="T", heading="", module="", source="a.md", url="/a")


def test_the_sentence_that_answers_is_quoted_not_the_one_that_restates_the_question():
    quote = book_quote("How tall is Quillon the teaching robot?",
                       [passage("The teaching robot is called Quillon."),
                        passage("Quillon is 1.4 m tall and weighs 31 kg.")])
    assert quote.text == "Quillon is 1.4 m tall and weighs 31 kg." and quote.number == 2


@pytest.mark.parametrize("text", [
    "```python\n# Update robot position based on received pose\nrobot.pose = msg.pose  # the pose arrives here\n```",
    "## Update the robot position from the received pose",  # a heading
    "See [Update robot position](../pose.md) for the received pose handling details.",  # a link
    "| field | meaning |\n|---|---|\n| pose | robot position received from the tracker |",  # a table row
    "How does the robot update its position from a received pose?",  # a question
    "The tracker publishes poses. It updates the robot position from every received pose at 50 Hz.",  # points back
])
def test_code_headings_links_rows_questions_and_dangling_sentences_are_never_quoted(text):
    assert book_quote("How is the robot position updated from a received pose?", [passage(text)]) is None


def test_a_sentence_holding_few_of_the_questions_words_is_not_quoted():
    assert book_quote("What gear ratio do Kestrel's knee actuators use?",
                      [passage("The ankle uses a belt drive with a tensioner at the heel.")]) is None


def test_a_sentence_without_every_name_the_question_gives_is_not_quoted():
    passages = [passage("Isaac ROS Visual SLAM provides GPU-accelerated visual-inertial SLAM with stereo cameras.")]
    assert book_quote("How does ORB-SLAM3 compare with Isaac ROS Visual SLAM in accuracy?", passages) is None
    assert book_quote("What does Isaac ROS Visual SLAM provide?", passages) is not None


def test_a_quote_is_shown_as_the_books_words():
    assert quoted("Quillon is 1.4 m tall.") == "The book says: \u201cQuillon is 1.4 m tall.\u201d"


@pytest.mark.parametrize("question, text", [
    ("What is a ROS 2 parameter?", "Gazebo has its own transport layer, separate from ROS 2."),
    ("What is a topic in ROS 2?", "A node is the unit of computation in ROS 2."),
    ("Who supplies Quillon's bumper?", "Quillon's bumper switches stop the wheels."),
])
def test_a_sentence_without_the_word_the_question_asks_about_is_not_quoted(question, text):
    assert book_quote(question, [passage(text)]) is None


@pytest.mark.parametrize("question, text", [
    ("What is a ROS 2 parameter?", "A ROS 2 parameter is a named setting that a node reads at startup."),
    ("What is a topic in ROS 2?", "A topic is a named bus over which ROS 2 nodes exchange messages."),
    ("Who supplies Quillon's bumper?", "Acme Robotics supplies Quillon's bumper switches."),
    ("Who supplies Quillon's bumper?", "The supplier of Quillon's bumper is Acme Robotics of Leeds."),
])
def test_a_sentence_holding_the_word_the_question_asks_about_is_quoted(question, text):
    assert book_quote(question, [passage(text)]).text == text


def test_a_sentence_without_the_value_a_question_asks_for_is_not_quoted():
    assert book_quote("How tall is Quillon the teaching robot?",
                      [passage("Quillon the teaching robot is tall enough to reach the lab benches.")]) is None


def test_a_question_too_short_to_say_what_it_asks_gets_no_quote():
    assert book_quote("Quillon", [passage("Quillon is 1.4 m tall and weighs 31 kg.")]) is None


@pytest.mark.parametrize("text", [
    "The tracker sends poses.\n\n    # Update robot position based on the received pose.\n    robot.pose = msg.pose",
    "The tracker sends poses.\n\n\t# Update robot position based on the received pose.\n\trobot.pose = msg.pose",
    "> ```python\n> # Update robot position based on the received pose.\n> robot.pose = msg.pose\n> ```",
    "field | meaning\n--- | ---\npose | Update robot position based on the received pose.",
    "See www.example.com/pose for how the robot position is updated from a received pose.",
    "See HTTPS://example.com/pose for how the robot position is updated from a received pose.",
])
def test_indented_and_quoted_code_rows_without_a_leading_bar_and_bare_links_are_never_quoted(text):
    assert book_quote("How is the robot position updated from a received pose?", [passage(text)]) is None


@pytest.mark.parametrize("underline", ["=====", "-----"])
def test_a_setext_heading_is_never_quoted(tmp_path, underline):
    (tmp_path / "pose.md").write_text(f"Update the robot position from every received pose!\n{underline}\n\n"
                                      "The tracker publishes poses at 50 Hz.\n")
    page = parse_page(tmp_path / "pose.md", tmp_path)
    passages = [passage(section.text) for section in page.sections]
    assert book_quote("How is the robot position updated from a received pose?", passages) is None
