"""What a reply that is no answer gives way to: one sentence of the book that answers on its own, or nothing."""

from __future__ import annotations

import pytest

from programs.rag.book_quote import book_quote, quoted
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
